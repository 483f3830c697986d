package runner

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servingprobe/servingprobe/simulator"
)

// drainHandler holds every generation request until the server has
// drained: a server that goes on working for a while after a run's
// client has its answers (freeing caches and slots, finishing requests
// the client gave up on), so that what arrives meanwhile waits behind it.
type drainHandler struct {
	next http.Handler

	mu        sync.Mutex
	busyUntil time.Time
}

func (d *drainHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "generate") {
		d.mu.Lock()
		wait := time.Until(d.busyUntil)
		d.mu.Unlock()
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
		}
	}
	d.next.ServeHTTP(w, r)
}

// busyFor makes the server busy for d from now, and returns when it
// drains.
func (d *drainHandler) busyFor(dur time.Duration) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busyUntil = time.Now().Add(dur)
	return d.busyUntil
}

// TestRunSetWaitsForIdle: between two runs of a set, the next run starts
// once the server is back at its idle state (here judged by a probe's
// TTFT, the server exposing no queue gauges), not after a fixed sleep:
// a server that drains within the pause is waited for, and no longer;
// one that does not is waited for the pause and no longer. Virtual time
// in a synctest bubble, so the durations are the server's and the
// wait's, not the machine's.
func TestRunSetWaitsForIdle(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 5*time.Millisecond
	cfg.TTFTJitter, cfg.ITLJitter, cfg.PrefillPerToken = 0, 0, 0
	for _, tc := range []struct {
		name         string
		drain, pause time.Duration
		waits        bool // for the drain, else for the pause
	}{
		{"drains within the pause", 3 * time.Second, 20 * time.Second, true},
		{"the pause bounds the wait", 30 * time.Second, 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &drainHandler{}
				srv := serveSim(t, cfg, func(h http.Handler) http.Handler { d.next = h; return d })
				defer srv.close()
				s := simBenchSpec(srv.url, 4)
				s.NumPrompts, s.MaxConcurrency = 8, 4
				ctx := context.Background()
				p, err := Prepare(ctx, s, srv.env)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Client.CloseIdleConnections()
				var starts, ends []time.Time
				var drained time.Time
				err = RunSet(ctx, srv.env, []*Prepared{p}, 2, tc.pause, SetHooks{
					Before: func(i, side int) { starts = append(starts, time.Now()) },
					After: func(i, side int, out *Output, err error) error {
						ends = append(ends, time.Now())
						if err == nil && (out == nil || out.Summary.Completed != 8) {
							t.Errorf("run %d: %v completed, want 8", i+1, out)
						}
						if i == 0 {
							drained = d.busyFor(tc.drain)
						}
						return err
					},
				})
				if err != nil {
					t.Fatalf("RunSet: %v", err)
				}
				if len(starts) != 2 || len(ends) != 2 {
					t.Fatalf("RunSet ran %d runs (%d ended), want 2", len(starts), len(ends))
				}
				waited := starts[1].Sub(ends[0])
				if tc.waits {
					// Within one look and a poll of the drain's end.
					if starts[1].Before(drained) || waited > tc.drain+2*idlePoll {
						t.Errorf("the second run started %v after the first ended; the server drained after %v, want a start within %v after it",
							waited, tc.drain, 2*idlePoll)
					}
				} else if !starts[1].Before(drained) || waited < tc.pause || waited > tc.pause+idlePoll {
					t.Errorf("the second run started %v after the first ended; want the pause, %v (the server drains after %v)",
						waited, tc.pause, tc.drain)
				}
			})
		})
	}
}

// TestABOrder: an interleaved set alternates A B B A A B B A, so that a
// steady drift weighs on both sides alike.
func TestABOrder(t *testing.T) {
	var got []byte
	for i := range 8 {
		got = append(got, "AB"[ABOrder(i)])
	}
	if string(got) != "ABBAABBA" {
		t.Errorf("ABOrder(0..7) = %s, want ABBAABBA", got)
	}
}
