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

// Timeline computes the timeline of s's details in about n intervals of
// a round width; nil without per-request times. Its requests are
// Summary.DetailRequests', so that it spreads the output of the requests
// the summary counted as successes and no other.
func (s *Summary) Timeline(n int) *Timeline {
	if s == nil || s.Details == nil || len(s.Details.EndTimes) == 0 {
		return nil
	}
	span := 0.0
	for _, e := range s.Details.EndTimes {
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
	for r := range s.DetailRequests() {
		sent, end := r.Sent, r.End
		if sched := r.Scheduled; sched >= 0 && sent > sched {
			t.count(t.Queued, sched, sent)
		}
		if sent < 0 || end < 0 {
			continue
		}
		t.count(t.InFlight, sent, end)
		first := r.FirstToken
		if !r.OK || first < 0 {
			continue
		}
		out := float64(r.OutputLen)
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
