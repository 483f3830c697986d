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
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// batchRun is an embeddings run of the embedding dataset: rows of 3, 1
// (a string), 4 and 2 inputs, the last failed.
func batchRun() ([]prober.Result, []datasets.Prompt, Params) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	rows := []datasets.Prompt{
		{Inputs: []string{"a", "b", "c"}, PromptLen: 6},
		{Text: "one", PromptLen: 2},
		{Inputs: []string{"a", "b", "c", "d"}, PromptLen: 8},
		{Inputs: []string{"a", "b"}, PromptLen: 4},
	}
	var results []prober.Result
	for i, c := range []struct{ sent, end, in int }{{0, 30, 6}, {10, 50, 2}, {20, 120, 8}, {30, 60, 0}} {
		r := prober.Result{Outcome: prober.OutcomeSuccess, Scheduled: ms(c.sent), Sent: ms(c.sent), End: ms(c.end),
			InputTokens: c.in, InputTokensSource: prober.TokenSourceUsage, FinishReason: "stop"}
		if i == 3 {
			r.Outcome, r.InputTokensSource, r.FinishReason = prober.OutcomeServerError, "", ""
		}
		results = append(results, r)
	}
	return results, rows, Params{Backend: "sglang-embedding", Embedding: true, Dataset: "embedding",
		RequestRate: math.Inf(1), Duration: 2 * time.Second}
}

// TestEmbeddingBatch: a run whose rows are lists has, in servingprobe's
// block and record, the inputs per successful request (a string row is
// one; the failed request is not counted, as in Total input tokens), the
// same figures on the two surfaces and read back from the record; the
// table's bench_serving rows are unchanged.
func TestEmbeddingBatch(t *testing.T) {
	results, rows, p := batchRun()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &EmbeddingBatch{Requests: 3, Inputs: 8, Max: 4}
	if d := cmp.Diff(want, s.EmbeddingBatch); d != "" {
		t.Fatalf("EmbeddingBatch (-want +got):\n%s", d)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	row := tableValue(table.String(), "Inputs per request (mean/max):")
	if row != "2.67/4" {
		t.Errorf("table row = %q, want 2.67/4", row)
	}
	if !strings.Contains(table.String(), "Total input tokens:                      16") {
		t.Errorf("bench_serving's input total is not the successes' 16:\n%s", table.String())
	}
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		SP struct {
			Batch struct {
				Requests, Inputs, Max int
				Mean                  float64
			} `json:"embedding_batch"`
		} `json:"servingprobe"`
	}
	if err := json.Unmarshal(pythonToJSON(line), &rec); err != nil {
		t.Fatal(err)
	}
	b := rec.SP.Batch
	if b.Requests != 3 || b.Inputs != 8 || b.Max != 4 || pyfmt.Fixed2(b.Mean) != "2.67" || b.Mean != 8.0/3 {
		t.Errorf("servingprobe.embedding_batch = %+v, want 3 requests, 8 inputs, max 4, mean 8/3 (the table's 2.67)", b)
	}
	back, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, back.EmbeddingBatch); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	back.Embedding = true
	var again bytes.Buffer
	if err := back.WriteTable(&again); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(table.String(), again.String()); d != "" {
		t.Errorf("the record read back prints another table (-run +record):\n%s", d)
	}
}

// TestEmbeddingBatchOnlyForLists: a run of single inputs (string rows
// only, or any other dataset) has no batch row or key, so that its table
// and record are what they were.
func TestEmbeddingBatchOnlyForLists(t *testing.T) {
	results, rows, p := batchRun()
	for i := range rows {
		rows[i].Inputs, rows[i].Text = nil, "x"
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
	if s.EmbeddingBatch != nil || strings.Contains(table.String(), "Inputs per request") || bytes.Contains(line, []byte("embedding_batch")) {
		t.Errorf("a run without list rows has a batch: %+v\n%s\n%s", s.EmbeddingBatch, table.String(), line)
	}
}

// TestEmbeddingBatchMerge: shards of the run merge into the single run's
// batch figures exactly.
func TestEmbeddingBatchMerge(t *testing.T) {
	results, rows, p := batchRun()
	single, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Merge(shardRecords(t, results, rows, p, 2, true))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(single.EmbeddingBatch, m.EmbeddingBatch); d != "" {
		t.Errorf("merged batch (-single +merged):\n%s", d)
	}
}

// TestEmbeddingBatchRefused: a record whose batch figures do not fit
// together, or whose mean does not follow from them, is refused with the
// key named.
func TestEmbeddingBatchRefused(t *testing.T) {
	results, rows, p := batchRun()
	s, err := Summarize(results, rows, p)
	if err != nil {
		t.Fatal(err)
	}
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := `"embedding_batch": {"requests": 3, "inputs": 8, "mean": 2.6666666666666665, "max": 4}`
	if !bytes.Contains(line, []byte(good)) {
		t.Fatalf("record has no %s:\n%s", good, line)
	}
	for _, bad := range []string{
		`"embedding_batch": {"requests": 3, "inputs": 8, "mean": 3.0, "max": 4}`,
		`"embedding_batch": {"requests": 3, "inputs": 2, "mean": 0.6666666666666666, "max": 4}`,
		`"embedding_batch": {"requests": 3, "inputs": 8, "mean": 2.6666666666666665, "max": 2}`,
		`"embedding_batch": {"requests": "3"}`,
	} {
		_, err := ParseRecord(bytes.Replace(line, []byte(good), []byte(bad), 1))
		if err == nil || !strings.Contains(err.Error(), "servingprobe.embedding_batch") {
			t.Errorf("ParseRecord with %s: error %v, want one naming servingprobe.embedding_batch", bad, err)
		}
	}
}

// tableValue is the value printed on the table row with label.
func tableValue(table, label string) string {
	for line := range strings.Lines(table) {
		if strings.HasPrefix(line, label) && len(line) > 41 {
			return strings.TrimSpace(line[41:])
		}
	}
	return ""
}
