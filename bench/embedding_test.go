package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestEmbeddingRun: an embeddings run counts its inputs and E2E, and no
// output token anywhere, the peak included.
func TestEmbeddingRun(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: t0, Sent: t0, End: t0.Add(30 * time.Millisecond),
		InputTokens: 9, InputTokensSource: prober.TokenSourceUsage, OutputTokensSource: prober.TokenSourceUsage, FinishReason: "stop"}
	s, err := Summarize([]prober.Result{r, r}, []datasets.Prompt{{PromptLen: 8}, {PromptLen: 8}},
		Params{Backend: "sglang-embedding", Embedding: true, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 2 || s.TotalInputTokens != 18 || s.TotalOutputTokens != 0 || s.MaxOutputTokensPerS != 0 || s.E2ELatency.Mean != 30 {
		t.Errorf("Summarize(embeddings) = completed %d, input %d, output %d, peak %v, mean E2E %v; want 2, 18, 0, 0, 30",
			s.Completed, s.TotalInputTokens, s.TotalOutputTokens, s.MaxOutputTokensPerS, s.E2ELatency.Mean)
	}
}

// embeddingLabels are the rows bench_serving prints for an embeddings run
// (sglang's python/sglang/benchmark/serving.py, benchmark(): with
// is_embedding it leaves out the generated tokens, the output and total
// token throughputs, the output peak, and the TTFT, TPOT and ITL sections),
// with the text dataset's rows.
var embeddingLabels = []string{
	"", "============ Serving Benchmark Result ============",
	"Backend:", "Traffic request rate:", "Max request concurrency:", "Successful requests:", "Benchmark duration (s):",
	"Total input tokens:", "Total input text tokens:", "Request throughput (req/s):", "Input token throughput (tok/s):",
	"Peak concurrent requests:", "Concurrency:", "----------------End-to-End Latency----------------",
	"Mean E2E Latency (ms):", "Median E2E Latency (ms):", "P90 E2E Latency (ms):", "P95 E2E Latency (ms):", "P99 E2E Latency (ms):",
	"==================================================",
}

// TestEmbeddingTable: a successful embeddings run prints bench_serving's
// rows in its order (embeddingLabels), its figures from the server's
// input counts and the requests' E2E, and the same bytes as its golden
// table and record; the record reads back into the same table.
func TestEmbeddingTable(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var results []prober.Result
	var rows []datasets.Prompt
	for i, c := range []struct{ sent, end, in int }{{0, 30, 9}, {10, 50, 12}, {20, 120, 7}} {
		results = append(results, prober.Result{Stream: false, Outcome: prober.OutcomeSuccess, Scheduled: ms(c.sent), Sent: ms(c.sent), End: ms(c.end),
			InputTokens: c.in, InputTokensSource: prober.TokenSourceUsage, FinishReason: "stop"})
		rows = append(rows, datasets.Prompt{Text: "x", PromptLen: 8 + i})
	}
	s, err := Summarize(results, rows, Params{Backend: "sglang-embedding", Embedding: true, Dataset: "random",
		RequestRate: math.Inf(1), MaxConcurrency: 4, Options: datasets.Options{RandomInputLen: 8}, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := s.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	var labels []string
	values := map[string]string{}
	for line := range strings.Lines(table.String()) {
		line = strings.TrimSuffix(line, "\n")
		label := line
		if len(line) > 41 && !strings.HasPrefix(line, "=") && !strings.HasPrefix(line, "-") {
			label, values[strings.TrimSpace(line[:40])] = strings.TrimSpace(line[:40]), strings.TrimSpace(line[41:])
		}
		labels = append(labels, label)
		if len(labels) == len(embeddingLabels) {
			break
		}
	}
	if diff := cmp.Diff(embeddingLabels, labels); diff != "" {
		t.Errorf("the table's bench_serving rows (-bench_serving +ours):\n%s", diff)
	}
	// 28 input tokens (the server's) over 2 s; E2E 30, 40 and 100 ms.
	for label, want := range map[string]string{"Total input tokens:": "28", "Input token throughput (tok/s):": "14.00",
		"Request throughput (req/s):": "1.50", "Mean E2E Latency (ms):": "56.67", "Median E2E Latency (ms):": "40.00",
		"Concurrency:": "0.09", "Peak concurrent requests:": "3"} {
		if values[label] != want {
			t.Errorf("%s %q, want %q", label, values[label], want)
		}
	}
	goldenCompare(t, "embedding.table.golden", table.Bytes())
	line, err := s.Record(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	goldenCompare(t, "embedding.jsonl.golden", line)
	back, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	back.Embedding = true // a record does not say; its reader knows the backend
	var again bytes.Buffer
	if err := back.WriteTable(&again); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(table.String(), again.String()); diff != "" {
		t.Errorf("the record read back prints another table (-run +record):\n%s", diff)
	}
}
