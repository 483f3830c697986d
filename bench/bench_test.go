package bench

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// benchResults builds n successful requests of 256 output tokens, one per
// event, as a long streaming run produces.
func benchResults(n int) ([]prober.Result, []datasets.Prompt) {
	results := make([]prober.Result, n)
	rows := make([]datasets.Prompt, n)
	for i := range results {
		sent := base.Add(time.Duration(i) * 10 * time.Millisecond)
		r := prober.Result{
			Stream: true, Scheduled: sent, Sent: sent, Outcome: prober.OutcomeSuccess, OutputTokens: 256,
			Events: make([]prober.Event, 256),
		}
		at := sent.Add(100 * time.Millisecond)
		for k := range r.Events {
			r.Events[k] = prober.Event{At: at, Tokens: 1}
			at = at.Add(time.Duration(15+k%7) * time.Millisecond)
		}
		r.FirstToken = r.Events[0].At
		r.End = at
		results[i] = r
		rows[i] = datasets.Prompt{PromptLen: 512, OutputLen: 256}
	}
	return results, rows
}

func BenchmarkAccumulatorAdd(b *testing.B) {
	results, rows := benchResults(1000)
	b.ReportAllocs()
	for b.Loop() {
		a := NewAccumulator(Params{Backend: "vllm"})
		for i := range results {
			a.Add(i, results[i], rows[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(results)), "ns/result")
}

func BenchmarkSummarize(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		results, rows := benchResults(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Summarize(results, rows, Params{Backend: "vllm", Duration: time.Minute}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTableAndRecord(b *testing.B) {
	results, rows := benchResults(1000)
	s, err := Summarize(results, rows, Params{Backend: "vllm", Duration: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.WriteTable(io.Discard)
		if _, err := s.Record(JSONOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
