package prober

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// RequestFunc sends one request and returns its Result. It must set Sent
// immediately before the request goes out, which for a benchmark is after
// the concurrency slot was acquired, and should copy scheduled into
// Result.Scheduled (Benchmark sets it if left zero). It must return when ctx
// is done.
type RequestFunc func(ctx context.Context, p datasets.Prompt, scheduled time.Time) Result

// BenchmarkConfig configures Benchmark.
type BenchmarkConfig struct {
	// Pacer schedules the measured requests; nil sends them all at once.
	Pacer Pacer
	// Prompts are sent in order, one request each, except conversations
	// (Prompt.MultiTurn): the pacer schedules a conversation's first
	// round, and each later round is sent as soon as the previous reply is
	// in, carrying it (Prompt.Round), on the same concurrency slot. A
	// round that fails ends its conversation: the later rounds are not
	// sent.
	Prompts []datasets.Prompt
	// Source, if set, replaces Prompts: prompts that may be made while
	// the run sends them (datasets.Source). A prompt it fails to make
	// stops the run, which returns that error.
	Source *datasets.Source
	// MaxConcurrency caps requests in flight; 0 means no cap. Arrivals are
	// still scheduled on time and wait for a slot in arrival order, as
	// bench_serving's semaphore; the wait is Sent-Scheduled.
	MaxConcurrency int
	// Warmup requests are sent all at once before the measured run, under
	// the same concurrency cap (the sglang#39398 fix). Their results are not
	// measured. If every one fails, Benchmark fails. See WarmupPrompts.
	Warmup []datasets.Prompt
	// WarmupPause is slept between warmup and the measured run. sglang
	// sleeps 1 s, which lets GPUs clock down (sglang#19916); default 0.
	WarmupPause time.Duration
	// MaxDuration is a hard cap on the measured run: at the cap, dispatching
	// stops and requests in flight are cancelled. 0 means no cap. For a
	// graceful stop that lets requests finish, wrap the pacer in MaxDuration.
	MaxDuration time.Duration
	// Do sends one request.
	Do RequestFunc
	// OnResult, if set, is called with each finished measured request, its
	// index and the prompt it sent (a conversation's round). Indices count
	// requests: prompt i's rounds take Rounds() consecutive indices from
	// the sum of the earlier prompts' rounds. Calls are serialised, in
	// completion order.
	OnResult func(i int, p datasets.Prompt, r Result)
	// DiscardResults drops results after OnResult, so that memory grows with
	// the concurrency rather than the length of the run.
	DiscardResults bool
	// Progress, if set, is updated as the run goes, for a progress bar or an
	// API to read concurrently.
	Progress *Progress
}

// BenchmarkRun is what Benchmark returns.
type BenchmarkRun struct {
	// Results of the measured requests in index order (see OnResult),
	// those never sent left out. Nil with DiscardResults.
	Results []Result
	// Warmup results, in completion order.
	Warmup []Result
	// Start is taken just before the first measured request is scheduled,
	// after warmup; Duration runs from Start until every measured request
	// finished. This is bench_serving's benchmark duration without the
	// server_info call it adds for sglang backends.
	Start    time.Time
	Duration time.Duration
	// Planned counts the requests the prompts make (their rounds);
	// Dispatched those handed to Do. The rest were never sent: the run was
	// stopped or hit MaxDuration, or a conversation's round failed.
	Planned, Dispatched int
	// HitMaxDuration says the run was stopped by MaxDuration. Duration is
	// then the cap: the requests still in flight were canceled, not
	// completed, so the measured window ends there.
	HitMaxDuration bool
}

// Progress holds counters of a running benchmark. Its methods are safe for
// concurrent use; the zero value is ready.
type Progress struct {
	total, dispatched, done, failed atomic.Int64
}

// ProgressSnapshot is a consistent-enough copy of Progress: each field is
// read atomically, but not all at the same instant.
type ProgressSnapshot struct {
	Total      int `json:"total"`      // requests planned
	Dispatched int `json:"dispatched"` // scheduled and handed out (possibly waiting for a slot)
	Done       int `json:"done"`       // finished, in any outcome
	Failed     int `json:"failed"`     // finished with an outcome other than success
}

// Snapshot reads the counters.
func (p *Progress) Snapshot() ProgressSnapshot {
	return ProgressSnapshot{
		Total:      int(p.total.Load()),
		Dispatched: int(p.dispatched.Load()),
		Done:       int(p.done.Load()),
		Failed:     int(p.failed.Load()),
	}
}

// WarmupPrompts returns n copies of the warmup request bench_serving sends:
// the first dataset row with its output length capped at 32 tokens.
func WarmupPrompts(first datasets.Prompt, n int) []datasets.Prompt {
	if first.MultiTurn {
		first = first.Round(0, nil, 0)
	}
	first.OutputLen = min(first.OutputLen, 32)
	out := make([]datasets.Prompt, n)
	for i := range out {
		out[i] = first
	}
	return out
}

// ErrWarmupFailed is returned, wrapped with the first warmup error, when
// every warmup request failed.
var ErrWarmupFailed = errors.New("every warmup request failed")

// Benchmark runs warmup, then sends cfg.Prompts paced by cfg.Pacer.
//
// When ctx is cancelled the run stops dispatching, requests in flight see
// the cancellation, and Benchmark returns the partial run together with the
// context's cause; the results then cover only what was dispatched.
func Benchmark(ctx context.Context, cfg BenchmarkConfig) (BenchmarkRun, error) {
	if cfg.Do == nil {
		return BenchmarkRun{}, errors.New("benchmark: no request function")
	}
	if cfg.MaxConcurrency < 0 {
		return BenchmarkRun{}, fmt.Errorf("benchmark: max concurrency must be >= 0, got %d", cfg.MaxConcurrency)
	}
	pacer := cfg.Pacer
	if pacer == nil {
		pacer = Constant{}
	}
	prog := cfg.Progress
	if prog == nil {
		prog = new(Progress)
	}
	src := cfg.Source
	if src == nil {
		src = datasets.FromPrompts(cfg.Prompts)
	}
	planned := src.Requests()
	// A Progress counts one run: a sweep's points reuse it, and each
	// point's done must not be read against another point's total.
	prog.done.Store(0)
	prog.dispatched.Store(0)
	prog.failed.Store(0)
	prog.total.Store(int64(planned))

	var slots chan struct{}
	if cfg.MaxConcurrency > 0 {
		slots = make(chan struct{}, cfg.MaxConcurrency)
	}

	run := BenchmarkRun{Planned: planned}
	if len(cfg.Warmup) > 0 {
		w, err := warmup(ctx, cfg, slots)
		run.Warmup = w
		if err != nil {
			return run, err
		}
		if cfg.WarmupPause > 0 {
			if err := sleepCtx(ctx, cfg.WarmupPause); err != nil {
				return run, context.Cause(ctx)
			}
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.MaxDuration > 0 {
		// A cancellation, not a deadline: a request in flight at the cap
		// did not time out, the run was stopped, and its outcome must say
		// canceled (a deadline would classify it as a timeout).
		stopTimer := time.AfterFunc(cfg.MaxDuration, func() { cancel(errMaxDuration) })
		defer stopTimer.Stop()
	}

	if !cfg.DiscardResults {
		run.Results = make([]Result, planned)
	}
	var (
		wg         sync.WaitGroup
		dispatched atomic.Int64 // rounds after the first are sent by the workers
	)
	// A channel rather than a sync.Mutex serialises OnResult: waiting on it
	// is durably blocking, so callers can test with testing/synctest.
	turn := make(chan struct{}, 1)
	finish := func(i int, p datasets.Prompt, r Result) {
		prog.done.Add(1)
		if r.Outcome != OutcomeSuccess {
			prog.failed.Add(1)
		}
		if cfg.OnResult != nil {
			turn <- struct{}{}
			cfg.OnResult(i, p, r)
			<-turn
		}
		if run.Results != nil {
			run.Results[i] = r // distinct i per goroutine: no lock needed
		}
	}

	run.Start = time.Now()
	var (
		n      uint64 // prompts taken from the source
		next   int    // the index of the next prompt's first request
		srcErr error  // a prompt the source failed to make: dispatching stops, requests in flight finish
	)
	for p, err := range src.All() {
		if err != nil {
			srcErr = err
			break
		}
		first := next
		next += p.Rounds()
		elapsed := time.Since(run.Start)
		wait, stop := pacer.Pace(elapsed, n)
		n++
		if stop {
			break
		}
		scheduled := run.Start.Add(elapsed + wait)
		if wait > 0 && sleepCtx(runCtx, wait) != nil {
			break
		}
		if slots != nil {
			// The dispatcher itself queues for the slot: arrivals wait in
			// FIFO order, as behind an asyncio.Semaphore, without a goroutine
			// per queued arrival. Later arrivals keep their planned times
			// because the pacer's schedule is absolute.
			select {
			case slots <- struct{}{}:
			case <-runCtx.Done():
			}
			if runCtx.Err() != nil {
				break
			}
		} else if runCtx.Err() != nil {
			break
		}
		dispatched.Add(1)
		prog.dispatched.Add(1)
		wg.Go(func() {
			if !p.MultiTurn {
				r := cfg.Do(runCtx, p, scheduled)
				if r.Scheduled.IsZero() {
					r.Scheduled = scheduled
				}
				if slots != nil {
					<-slots
				}
				finish(first, p, r)
				return
			}
			if slots != nil {
				defer func() { <-slots }()
			}
			converse(runCtx, cfg.Do, p, scheduled, func(k int, q datasets.Prompt, r Result) bool {
				finish(first+k, q, r)
				if k+1 < p.Rounds() && r.Outcome == OutcomeSuccess && runCtx.Err() == nil {
					dispatched.Add(1)
					prog.dispatched.Add(1)
					return true
				}
				return false
			})
		})
	}
	wg.Wait()
	run.Dispatched = int(dispatched.Load())
	run.Duration = time.Since(run.Start)
	if errors.Is(context.Cause(runCtx), errMaxDuration) {
		run.HitMaxDuration = true
		run.Duration = min(run.Duration, cfg.MaxDuration)
	}
	if run.Results != nil {
		// Every request sent has an outcome; the rest were never sent.
		run.Results = slices.DeleteFunc(run.Results, func(r Result) bool { return r.Outcome == "" })
	}
	if err := context.Cause(runCtx); err != nil && !errors.Is(err, errMaxDuration) {
		return run, err
	}
	return run, srcErr
}

var errMaxDuration = errors.New("benchmark reached its maximum duration")

// warmup sends every warmup prompt at once, under the concurrency cap.
func warmup(ctx context.Context, cfg BenchmarkConfig, slots chan struct{}) ([]Result, error) {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out = make([]Result, 0, len(cfg.Warmup))
	)
	for _, p := range cfg.Warmup {
		wg.Go(func() {
			if slots != nil {
				select {
				case slots <- struct{}{}:
					defer func() { <-slots }()
				case <-ctx.Done():
					return
				}
			}
			r := cfg.Do(ctx, p, time.Now())
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	for _, r := range out {
		if r.Outcome == OutcomeSuccess {
			return out, nil
		}
	}
	first := "no result"
	if len(out) > 0 {
		first = out[0].Err
		if first == "" {
			first = string(out[0].Outcome)
		}
	}
	return out, fmt.Errorf("%w: %s", ErrWarmupFailed, first)
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// converse sends a conversation's rounds in turn, each carrying the real
// replies before it: the first at its scheduled time, the others as soon
// as the previous reply is in (their Scheduled is then their Sent: no
// client queue). done is called with each round's index, prompt and
// result, and says whether to send the next.
func converse(ctx context.Context, do RequestFunc, p datasets.Prompt, scheduled time.Time, done func(k int, q datasets.Prompt, r Result) bool) {
	n := p.Rounds()
	replies := make([]string, 0, n)
	replyTokens := 0
	for k := range n {
		q := p.Round(k, replies, replyTokens)
		at := scheduled
		if k > 0 {
			at = time.Now()
		}
		r := do(ctx, q, at)
		if r.Scheduled.IsZero() {
			r.Scheduled = at
		}
		// As a conversation probe numbers its turns (runConversation),
		// so that the bench's summary can set the cold turn apart.
		r.Turn = k + 1
		if !done(k, q, r) {
			return
		}
		replies = append(replies, r.GeneratedText)
		replyTokens += r.Samples().OutputTokens
	}
}
