package exporter

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/prober"
)

// BenchmarkObserve is the exporter's cost per Result: every histogram and
// counter of one request with 256 output events.
func BenchmarkObserve(b *testing.B) {
	for _, n := range []int{4, 256} {
		b.Run(map[int]string{4: "events=4", 256: "events=256"}[n], func(b *testing.B) {
			m := NewMetrics(prometheus.NewRegistry())
			m.SetTargets([]TargetSeries{{Name: "vllm", Backend: "vllm-chat", Model: "qwen", Modules: []string{"chat"}}})
			obs := m.Observer(ModeBench)
			r := successResult("vllm", "chat", "qwen")
			ft := r.FirstToken
			r.Events = r.Events[:0]
			for i := range n {
				r.Events = append(r.Events, prober.Event{At: ft.Add(time.Duration(i) * 10 * time.Millisecond), Tokens: 1})
			}
			r.OutputTokens = n
			r.End = r.Events[n-1].At
			b.ReportAllocs()
			for b.Loop() {
				obs.Observe(r)
			}
		})
	}
}
