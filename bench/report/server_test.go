package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/servingprobe/servingprobe/bench"
)

// serverDetails are four requests: two streamed successes that stated
// timings, a success that stated none, and a failure that stated some
// (which is drawn nowhere, as failures are not in the latency charts).
func serverDetails() *bench.Details {
	st := func(load, prompt, eval, total float64, evalCount int) *bench.ServerTiming {
		return &bench.ServerTiming{LoadDuration: load, PromptEvalDuration: prompt, EvalDuration: eval, TotalDuration: total, EvalCount: evalCount, PromptEvalCount: 9}
	}
	return &bench.Details{
		InputLens:       []int{10, 20, 30, 40},
		OutputLens:      []int{5, 1, 4, 0},
		TTFTs:           []float64{0.1, 0.2, 0.05, 0},
		ITLs:            [][]float64{{0.02, 0.02, 0.02, 0.02}, nil, {0.01, 0.01, 0.01}, nil},
		ScheduledTimes:  []float64{0, 1, 2, 3},
		SentTimes:       []float64{0, 1, 2, 3},
		FirstTokenTimes: []float64{0.1, 1.2, 2.05, -1},
		EndTimes:        []float64{0.18, 1.2, 2.08, 3.5},
		Outcomes:        []string{"success", "success", "success", "timeout"},
		ServerTimings:   []*bench.ServerTiming{st(0.01, 0.06, 0.06, 0.15, 5), st(0, 0.15, 0.01, 0.17, 1), nil, st(0, 0, 0, 0.4, 0)},
	}
}

// TestServerRequestsOf: each pair holds the client's and the server's
// value of the same request, only for successes that stated timings; a
// one-token request has no TPOT but has the server's eval per token.
func TestServerRequestsOf(t *testing.T) {
	got, ok := serverRequestsOf(&bench.Summary{Details: serverDetails()})
	if !ok {
		t.Fatal("serverRequestsOf: no timings found")
	}
	want := serverReqs{
		n: 2, ok: 3,
		prefillSent: []float64{0, 1}, ttftMs: []float64{100, 200}, prefillMs: []float64{70, 150},
		e2eSent: []float64{0, 1}, e2eMs: []float64{180, 200}, totalMs: []float64{150, 170},
		tpotMs: []float64{20}, perTokenMs: []float64{12, 10},
		load: []float64{10, 0}, promptEval: []float64{60, 150}, eval: []float64{60, 10},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(serverReqs{}), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("serverRequestsOf (-want +got):\n%s", diff)
	}
	d := serverDetails()
	d.ServerTimings = nil
	if _, ok := serverRequestsOf(&bench.Summary{Details: d}); ok {
		t.Error("serverRequestsOf found timings in details without any")
	}
	d.ServerTimings = []*bench.ServerTiming{nil, nil, nil, {TotalDuration: 1}}
	if _, ok := serverRequestsOf(&bench.Summary{Details: d}); ok {
		t.Error("serverRequestsOf drew a failure's timings")
	}
}

// TestReportServerTimings: a run whose details have server timings gets
// their section, table and charts; the same run without them draws exactly
// the page it drew before (no section, no chart, no table).
func TestReportServerTimings(t *testing.T) {
	draw := func(d *bench.Details) string {
		s := &bench.Summary{Backend: "ollama-chat", DatasetName: "random", Completed: 3, Requests: 4, Details: d}
		var b bytes.Buffer
		if err := Write(&b, []Run{{Name: "run", Summary: s}}, Options{Now: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	with := draw(serverDetails())
	for _, w := range []string{
		"<h2>Server timings</h2>", "2 of the run&#39;s 3 successful requests stated timings",
		`data-chart="server-prefill" data-points="4"`, `data-chart="server-e2e" data-points="4"`, `data-chart="server-per-token"`,
		`<td>prompt eval</td><td class="num">2</td><td class="num">105.00</td><td class="num">105.00</td><td class="num">150.00</td>`,
		`<td>eval per output token</td><td class="num">2</td><td class="num">11.00</td>`,
		"■ load + prompt eval (server)",
	} {
		if !strings.Contains(with, w) {
			t.Errorf("report with server timings lacks %q", w)
		}
	}
	d := serverDetails()
	d.ServerTimings = nil
	without := draw(d)
	for _, w := range []string{"Server timings", "server-prefill", "server-timings", "(server)"} {
		if strings.Contains(without, w) {
			t.Errorf("report without server timings has %q", w)
		}
	}
	// Removing the section from the page with timings leaves the page
	// without them, byte for byte.
	start := strings.Index(with, "<section><h2>Server timings</h2>")
	end := start + strings.Index(with[start:], "</section>\n") + len("</section>\n")
	if start < 0 || with[:start]+with[end:] != without {
		t.Error("the page with server timings differs from the page without them beyond its section")
	}
}
