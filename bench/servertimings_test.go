package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/prober"
)

// TestServerTimingsDetails: the details carry what each request's server
// stated about its time, in seconds like the other times, null for a
// request that stated none, after bench_serving's arrays and ours; the
// record read back holds the same values; a run where no request stated
// timings has no such key, in memory or spooled.
func TestServerTimingsDetails(t *testing.T) {
	results, rows := fixture()
	stated := prober.ServerTimings{TotalDuration: 135904321, LoadDuration: 11874202, PromptEvalCount: 13,
		PromptEvalDuration: 82113540, EvalCount: 4, EvalDuration: 40398112}
	const want = `, "server_timings": [{"total_duration": 0.135904321, "load_duration": 0.011874202, "prompt_eval_count": 13, ` +
		`"prompt_eval_duration": 0.08211354, "eval_count": 4, "eval_duration": 0.040398112}, null, null, null, null, null]}` + "\n"
	for _, spool := range []bool{false, true} {
		p := fixtureParams()
		p.Details, p.SpoolDetails = true, spool

		s, err := Summarize(results, rows, p)
		if err != nil {
			t.Fatal(err)
		}
		line, err := s.Record(JSONOptions{Details: true})
		s.SpooledDetails.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(line), "server_timings") {
			t.Errorf("spool %v: a run without server timings has the key:\n%s", spool, line)
		}

		timed := append([]prober.Result(nil), results...)
		timed[0].Server = stated
		s, err = Summarize(timed, rows, p)
		if err != nil {
			t.Fatal(err)
		}
		line, err = s.Record(JSONOptions{Details: true})
		s.SpooledDetails.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(line), want) || !strings.Contains(string(line), `"request_outcomes": [`) {
			t.Errorf("spool %v: record ends\n%s\nwant\n%s", spool, line[max(0, len(line)-len(want)):], want)
		}
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("ParseRecord: %v", err)
		}
		wantBack := []*ServerTiming{{TotalDuration: 0.135904321, LoadDuration: 0.011874202, PromptEvalCount: 13,
			PromptEvalDuration: 0.08211354, EvalCount: 4, EvalDuration: 0.040398112}, nil, nil, nil, nil, nil}
		if diff := cmp.Diff(wantBack, back.Details.ServerTimings); diff != "" {
			t.Errorf("spool %v: timings read back (-want +got):\n%s", spool, diff)
		}
		// Seconds back to the server's nanoseconds, exactly once rounded.
		if got := time.Duration(math.Round(back.Details.ServerTimings[0].PromptEvalDuration * 1e9)); got != stated.PromptEvalDuration {
			t.Errorf("prompt eval read back as %v, want %v", got, stated.PromptEvalDuration)
		}
	}
}

// TestServerTimingsSummaryJSON: the HTTP API's summary (encoding/json)
// carries the same array, and leaves it out when no request stated
// timings.
func TestServerTimingsSummaryJSON(t *testing.T) {
	d := Details{ServerTimings: []*ServerTiming{nil, {TotalDuration: 0.5, EvalCount: 3}}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"server_timings":[null,{"total_duration":0.5,"load_duration":0,"prompt_eval_count":0,"prompt_eval_duration":0,"eval_count":3,"eval_duration":0}]`) {
		t.Errorf("json.Marshal(details) = %s", b)
	}
	b, _ = json.Marshal(Details{})
	if strings.Contains(string(b), "server_timings") {
		t.Errorf("details without timings: %s", b)
	}
}
