package runner

import (
	"context"
	"errors"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// DefaultRunsPause bounds the wait between two runs of a set (Spec.Runs):
// the next run starts as soon as the server is back at its idle state,
// or after this long. A server's client has its answers when a run ends,
// but the engine may still free caches and slots; two seconds cover that
// for the engines measured here without making a set of short runs long.
const DefaultRunsPause = 2 * time.Second

// ABOrder is the side (0: the first server, 1: the second) of the i-th of
// 2n interleaved runs: A B B A A B B A ..., so that a drift that grows
// steadily through the set weighs on both sides alike (a plain A B A B
// ... would put every B later than its A).
func ABOrder(i int) int {
	if (i/2)%2 == 0 {
		return i % 2
	}
	return 1 - i%2
}

// SetHooks are told of every run of a set: Before (if set) just before
// it starts, after the pause, and After as it ends, with its index in the
// set (from 0), its side (the index of its Prepared), its output (nil
// when the run produced none) and its error. A non-nil return of After
// stops the set with that error; without After, a run's error does.
type SetHooks struct {
	Before func(i, side int)
	After  func(i, side int, out *Output, err error) error
}

// RunSet runs a set: each of sides n times, one run after another,
// interleaved A B B A ... (ABOrder) when there are two sides. Between two
// runs it waits for the server the last run loaded to be back at its
// idle state, as a search waits between its points (its queue gauges at
// 0, or else a probe's TTFT back near the one before the set), for at
// most pause; a pause of 0 starts the next run at once. The CLI's --runs
// and --ab-base-url and a bench window's runs all go through it.
func RunSet(ctx context.Context, env Env, sides []*Prepared, n int, pause time.Duration, h SetHooks) error {
	if len(sides) == 0 || len(sides) > 2 {
		return errors.New("a set of runs has one side or two")
	}
	logger := env.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	watch := make([]*idleWatch, len(sides))
	for i, p := range sides {
		watch[i] = &idleWatch{p: p, client: env.ServerMetrics.Client, timeout: pause}
	}
	total := n * len(sides)
	if pause > 0 && total > 1 {
		// One look before the set: a server without queue gauges is
		// probed, and this first probe, on a server the set has not yet
		// loaded, is the baseline the waits compare with.
		for _, w := range watch {
			w.look(ctx)
		}
	}
	last := 0
	for i := range total {
		side := 0
		if len(sides) == 2 {
			side = ABOrder(i)
		}
		if i > 0 && pause > 0 {
			waited, idle, err := watch[last].wait(ctx, pause)
			if err != nil {
				return err
			}
			if idle {
				level.Info(logger).Log("msg", "The server is idle; the next run starts", "waited", waited.Round(time.Millisecond), "run", i+1)
			} else {
				level.Warn(logger).Log("msg", "The server did not return to its idle state within the pause between runs", "waited", waited.Round(time.Millisecond), "run", i+1)
			}
		}
		if h.Before != nil {
			h.Before(i, side)
		}
		out, err := sides[side].Run(ctx, env)
		if h.After != nil {
			err = h.After(i, side, out, err)
		}
		if err != nil {
			return err
		}
		last = side
	}
	return nil
}
