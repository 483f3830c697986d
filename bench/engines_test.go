package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// engineRun is a chat run against a context-limited server that closes
// kept-alive connections: five requests asking 100 tokens each. Two stop
// at the context (finish "length", 40 and 30 tokens), one stops at EOS
// (finish "stop", 20), one gets all 100, and one fails; two were retried
// on a new connection, one of them the failure.
func engineRun() ([]prober.Result, []datasets.Prompt, Params) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var results []prober.Result
	var rows []datasets.Prompt
	for i, c := range []struct {
		out     int
		finish  string
		retries int
		ok      bool
	}{{40, "length", 1, true}, {30, "length", 0, true}, {20, "stop", 0, true}, {100, "length", 0, true}, {0, "", 1, false}} {
		r := prober.Result{Outcome: prober.OutcomeSuccess, Stream: true, Scheduled: ms(10 * i), Sent: ms(10 * i), FirstToken: ms(10*i + 5), End: ms(10*i + 50),
			InputTokens: 15, InputTokensSource: prober.TokenSourceUsage, OutputTokens: c.out, OutputTokensSource: prober.TokenSourceUsage,
			RequestedOutputTokens: 100, FinishReason: c.finish, ConnRetries: c.retries}
		if !c.ok {
			r.Outcome, r.OutputTokensSource, r.FirstToken = prober.OutcomeConnectionClosed, "", time.Time{}
		}
		results = append(results, r)
		rows = append(rows, datasets.Prompt{Text: "x", PromptLen: 7, OutputLen: 100})
	}
	return results, rows, Params{Backend: "sglang-oai-chat", Dataset: "random", RequestRate: math.Inf(1), Duration: time.Second}
}

// TestEngineNotes: the retries and the short outputs are counted from the
// per-request results, shown in servingprobe's block and in the record's
// servingprobe object with the same figures, and read back from the
// record into the same table.
func TestEngineNotes(t *testing.T) {
	results, rows, p := engineRun()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &EngineNotes{ConnRetries: 2, Short: 3, ShortOutputTokens: 90, ShortRequestedTokens: 300,
		ShortFinish: map[string]int{"length": 2, "stop": 1}}
	if d := cmp.Diff(want, s.Engine); d != "" {
		t.Fatalf("Engine (-want +got):\n%s", d)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for label, v := range map[string]string{
		"Retried on a new connection:": "2",
		"Outputs shorter than asked:":  "3",
		"  output tokens of those:":    "90 of 300 asked",
		"  finish reasons of those:":   "length 2, stop 1",
	} {
		if got := tableValue(table.String(), label); got != v {
			t.Errorf("table row %q = %q, want %q\n%s", label, got, v, table.String())
		}
	}
	if !strings.Contains(table.String(), "--compat new-connection") {
		t.Errorf("the table does not say how to avoid the retries:\n%s", table.String())
	}
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		SP struct {
			Retries int `json:"conn_retries"`
			Short   struct {
				Requests        int            `json:"requests"`
				OutputTokens    int            `json:"output_tokens"`
				RequestedTokens int            `json:"requested_tokens"`
				Finish          map[string]int `json:"finish_reasons"`
			} `json:"short_outputs"`
		} `json:"servingprobe"`
	}
	if err := json.Unmarshal(pythonToJSON(line), &rec); err != nil {
		t.Fatal(err)
	}
	sp := rec.SP
	if sp.Retries != want.ConnRetries || sp.Short.Requests != want.Short || sp.Short.OutputTokens != want.ShortOutputTokens ||
		sp.Short.RequestedTokens != want.ShortRequestedTokens || !cmp.Equal(sp.Short.Finish, want.ShortFinish) {
		t.Errorf("record's servingprobe notes = %+v, want the table's %+v", sp, want)
	}
	std, err := s.Record(JSONOptions{StandardOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(std, []byte("short_outputs")) || bytes.Contains(std, []byte("conn_retries")) {
		t.Errorf("bench_serving's keys carry servingprobe's notes: %s", std)
	}
	back, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, back.Engine); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	var again bytes.Buffer
	if err := back.WriteTable(&again); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(table.String(), again.String()); d != "" {
		t.Errorf("the record read back prints another table (-run +record):\n%s", d)
	}
}

// TestEngineNotesMerge: shards of the run merge into the single run's
// notes exactly.
func TestEngineNotesMerge(t *testing.T) {
	results, rows, p := engineRun()
	single, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Merge(shardRecords(t, results, rows, p, 2, true))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(single.Engine, m.Engine); d != "" {
		t.Errorf("merged notes (-single +merged):\n%s", d)
	}
}

// TestEngineNotesNone: a run with every output as long as asked and no
// retry has no notes, so its table and record are what they were.
func TestEngineNotesNone(t *testing.T) {
	results, rows, p := engineRun()
	for i := range results {
		results[i].ConnRetries, results[i].OutputTokens = 0, 100
	}
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Engine != nil || strings.Contains(table.String(), "shorter than asked") || strings.Contains(table.String(), "Retried") ||
		bytes.Contains(line, []byte("short_outputs")) || bytes.Contains(line, []byte("conn_retries")) {
		t.Errorf("a run with nothing to note has notes: %+v\n%s\n%s", s.Engine, table.String(), line)
	}
}

// TestShortFinishKey: a finish reason is counted under itself only when
// it is a short word; the keys stay bounded whatever a server sends.
func TestShortFinishKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"length", "length"}, {"end_turn", "end_turn"}, {"", "none"}, {"max-tokens", "max-tokens"},
		{"Stop", "other"}, {"stop\n", "other"}, {strings.Repeat("a", 33), "other"}, {`"x"`, "other"},
	} {
		if got := ShortFinishKey(tc.in); got != tc.want {
			t.Errorf("ShortFinishKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var tl engineTally
	for i := range 20 {
		tl.finish(ShortFinishKey("r"+string(rune('a'+i))), 1)
	}
	if len(tl.n.ShortFinish) != maxFinishReasons || tl.n.ShortFinish["other"] != 20-(maxFinishReasons-1) {
		t.Errorf("20 distinct reasons kept as %v, want %d keys with the rest under other", tl.n.ShortFinish, maxFinishReasons)
	}
}
