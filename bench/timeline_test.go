package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// rampDetails is a run of 40 requests sent 0.25 s apart, each taking
// 0.1 s to its first token and then 1 s for 20 tokens; every fourth is
// queued 0.2 s first, and the last one failed.
func rampDetails() *Details {
	d := &Details{}
	for i := range 40 {
		sched := float64(i) * 0.25
		sent := sched
		if i%4 == 0 {
			sent += 0.2
		}
		out, outcome := 20, "success"
		if i == 39 {
			out, outcome = 0, "http_5xx"
		}
		d.ScheduledTimes = append(d.ScheduledTimes, sched)
		d.SentTimes = append(d.SentTimes, sent)
		d.FirstTokenTimes = append(d.FirstTokenTimes, sent+0.1)
		d.EndTimes = append(d.EndTimes, sent+1.1)
		d.OutputLens = append(d.OutputLens, out)
		d.InputLens = append(d.InputLens, 100)
		d.Outcomes = append(d.Outcomes, outcome)
	}
	return d
}

func TestTimeline(t *testing.T) {
	tl := (&Summary{Details: rampDetails()}).Timeline(100)
	if tl == nil || tl.Width != 0.2 {
		t.Fatalf("timeline %+v, want 0.2 s intervals for an 11 s run", tl)
	}
	// Every successful output token is in the series exactly once.
	total := 0.0
	for _, v := range tl.TokPerS {
		total += v * tl.Width
	}
	if math.Abs(total-39*20) > 1e-6 {
		t.Errorf("tokens over the timeline %.3f, want %d", total, 39*20)
	}
	// Steady state: four requests a second for 1.1 s each, so about 4.4
	// in flight, and 20 tokens a second each over 1 s of decode: 80 tok/s.
	mid := len(tl.At) / 2
	if tl.InFlight[mid] < 4 || tl.InFlight[mid] > 5 {
		t.Errorf("in flight at %.1f s = %v, want 4 or 5", tl.At[mid], tl.InFlight[mid])
	}
	if math.Abs(tl.TokPerS[mid]-80) > 20 {
		t.Errorf("throughput at %.1f s = %.1f tok/s, want about 80", tl.At[mid], tl.TokPerS[mid])
	}
	queued := 0.0
	for _, q := range tl.Queued {
		queued += q
	}
	if queued == 0 {
		t.Error("no queued requests on the timeline")
	}
	if (*Summary)(nil).Timeline(10) != nil || (&Summary{}).Timeline(10) != nil || (&Summary{Details: &Details{}}).Timeline(10) != nil {
		t.Error("a run without times has no timeline")
	}
}

// TestPlotThroughputGolden pins --plot-throughput's text plot, and that it
// fits an 80-column terminal.
func TestPlotThroughputGolden(t *testing.T) {
	var b bytes.Buffer
	if err := (&Summary{Details: rampDetails()}).Timeline(100).WritePlot(&b); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(b.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
		}
	}
	goldenCompare(t, "plot-throughput.golden", b.Bytes())
}
