package runner

import (
	"context"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// phaseLimits caps each dynamic-plan phase's requests in flight at its
// max_concurrency: a request of a capped phase waits for one of its
// phase's slots before it is sent, as behind the global
// --max-concurrency. The wait falls between Scheduled and Sent, so it is
// measured as client queue time, never hidden. Without a capped phase
// (every other dataset) do is returned as it is.
func phaseLimits(src *datasets.Source, do func(context.Context, datasets.Prompt, time.Time) prober.Result) func(context.Context, datasets.Prompt, time.Time) prober.Result {
	if src == nil || src.OnDemand() {
		return do // prompts made while sent: the random datasets, which have no phases
	}
	slots := map[string]chan struct{}{}
	for _, p := range src.Prompts() {
		if p.PhaseMaxConcurrency > 0 && slots[p.Phase] == nil {
			slots[p.Phase] = make(chan struct{}, p.PhaseMaxConcurrency)
		}
	}
	if len(slots) == 0 {
		return do
	}
	return func(ctx context.Context, p datasets.Prompt, scheduled time.Time) prober.Result {
		sem := slots[p.Phase]
		if sem == nil || p.PhaseMaxConcurrency <= 0 {
			return do(ctx, p, scheduled)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// Not sent: the run is over. Do on a done context classifies
			// it as the runner's other unsent requests are.
			return do(ctx, p, scheduled)
		}
		defer func() { <-sem }()
		return do(ctx, p, scheduled)
	}
}
