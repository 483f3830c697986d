package bench

import (
	"math"
)

// Timeline is a run over time, in equal intervals from its start: output
// tokens per second (each successful request's output spread evenly from
// its first token to its end), and requests in flight (sent, not ended)
// and queued in the client (scheduled, not sent) at each interval's middle.
// It is drawn by --plot-throughput and by the HTML report.
type Timeline struct {
	Width    float64   // seconds per interval
	At       []float64 // each interval's middle, seconds from the start
	TokPerS  []float64
	InFlight []float64
	Queued   []float64
}

// Timeline computes d's timeline in about n intervals of a round width;
// nil without per-request times.
func (d *Details) Timeline(n int) *Timeline {
	if d == nil || len(d.EndTimes) == 0 {
		return nil
	}
	span := 0.0
	for _, e := range d.EndTimes {
		span = max(span, e)
	}
	if !(span > 0) {
		return nil
	}
	width := 60.0
	for _, w := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60} {
		if span/w <= float64(n) {
			width = w
			break
		}
	}
	k := int(math.Ceil(span / width))
	t := &Timeline{Width: width, At: make([]float64, k), TokPerS: make([]float64, k), InFlight: make([]float64, k), Queued: make([]float64, k)}
	for j := range t.At {
		t.At[j] = (float64(j) + 0.5) * width
	}
	for i := range d.EndTimes {
		sent, end := d.SentTimes[i], d.EndTimes[i]
		if sched := d.ScheduledTimes[i]; sched >= 0 && sent > sched {
			t.count(t.Queued, sched, sent)
		}
		if sent < 0 || end < 0 {
			continue
		}
		t.count(t.InFlight, sent, end)
		ok := i >= len(d.Outcomes) || d.Outcomes[i] == "success" || d.Outcomes[i] == ""
		first := d.FirstTokenTimes[i]
		if !ok || first < 0 || i >= len(d.OutputLens) {
			continue
		}
		out := float64(d.OutputLens[i])
		if end <= first {
			t.TokPerS[min(int(first/width), k-1)] += out / width
			continue
		}
		for j := int(first / width); j <= int(end/width) && j < k; j++ {
			lo, hi := max(first, float64(j)*width), min(end, float64(j+1)*width)
			if hi > lo {
				t.TokPerS[j] += out * (hi - lo) / (end - first) / width
			}
		}
	}
	return t
}

// count adds one to every interval whose middle lies in [from, to).
func (t *Timeline) count(v []float64, from, to float64) {
	for j := max(int(from/t.Width-0.5), 0); j < len(v); j++ {
		m := t.At[j]
		if m >= to {
			break
		}
		if m >= from {
			v[j]++
		}
	}
}
