package runner

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// What a run holds in memory, charged in one place: the prompt set, built
// before the first request and held to the end (datasets.EstimateBytes);
// the images of the requests in flight, made per request
// (datasets.ImageBytes); the tokenizer's work on each request in flight
// (bounded by prober's count cap); and what the summary keeps of each
// request for the record (the details' row and per-token samples). The
// count limits alone bound none of them: bench.max_prompts prompts of the
// largest random_input_len are gigabytes of text, and 10,000 requests of
// 131,072 output tokens kept about 65 GB of per-token samples.

// keptBytesPerOutputToken is what the summary keeps per output token of a
// run with the window's details (exact statistics): the inter-token
// sample in the statistics and again in the details, their slices' slack,
// the spread events. Measured at about 50 bytes (a window of 131,072
// output tokens per request grew 65 MB/s at 1.3 M tokens/s).
const keptBytesPerOutputToken = 50

// keptBytesPerRequest is what the summary keeps per request beyond its
// tokens: the details row (times, lengths, error, outcome) and the
// statistics' record.
const keptBytesPerRequest = 512

// tokenizerBytesPerRequest is what counting one request's server text
// holds: prober counts at most a MiB of it, in words of at most 4 KiB,
// keeping no ids (tokenizer.CountContext).
const tokenizerBytesPerRequest = 256 << 10

// defaultOutputTokens stands for a request's output length where the
// dataset's rows set it: a guess for the admission, the run's charges
// see the real one.
const defaultOutputTokens = 1024

// MemoryNeed is a run's worst case in bytes, by part.
type MemoryNeed struct {
	Prompts  uint64 // the prompt set, held for the run
	InFlight uint64 // images and tokenizer work of the requests in flight
	Outputs  uint64 // kept for the record: every request's row and per-token samples
}

// Total is the sum of the parts, saturated.
func (n MemoryNeed) Total() uint64 { return satAdd(satAdd(n.Prompts, n.InFlight), n.Outputs) }

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return math.MaxUint64
	}
	return s
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// MemoryNeed estimates what the run holds at most. Every product
// saturates: a huge count must not wrap around to a small estimate that
// passes a bound.
func (s *Spec) MemoryNeed() MemoryNeed {
	n := uint64(max(s.NumPrompts, 0))
	// As the window's bound always has: max_concurrency requests, one
	// without it (a rate paces those).
	flight := uint64(max(s.MaxConcurrency, 1))
	out := uint64(max(s.outputTokens(), 0))
	return MemoryNeed{
		Prompts:  datasets.EstimateBytes(s.Dataset, s.NumPrompts, s.Options),
		InFlight: satMul(flight, satAdd(datasets.ImageBytes(s.Dataset, s.Options), tokenizerBytesPerRequest)),
		Outputs:  satMul(n, satAdd(keptBytesPerRequest, satMul(out, keptBytesPerOutputToken))),
	}
}

// outputTokens is the output length each request asks for.
func (s *Spec) outputTokens() int {
	o := s.Options
	switch s.Dataset {
	case "random", "random-ids", "image", "audio":
		return o.RandomOutputLen
	case "generated-shared-prefix":
		return o.GSPOutputLen
	case "fixed":
		return o.FixedOutputLen
	}
	if o.SharegptOutputLen > 0 {
		return o.SharegptOutputLen
	}
	return defaultOutputTokens
}

// MemoryBytes is the part of MemoryNeed held from the start (the prompt
// set) and the part that comes and goes with the requests in flight.
func (s *Spec) MemoryBytes() (held, flight uint64) {
	n := s.MemoryNeed()
	return n.Prompts, n.InFlight
}

// ErrMemoryBudget is the cause of a run stopped because what it keeps
// grew past its memory budget (Env.MemoryBudget).
var ErrMemoryBudget = errors.New("the run outgrew its memory budget")

// memoryBudget charges what a run keeps as it goes against Env's budget:
// the worst case of its prompts and requests in flight from the start,
// then each result's kept bytes.
type memoryBudget struct {
	limit uint64
	held  atomic.Uint64
	// stop cancels the run with the budget's error (once is enough).
	stop func(error)
}

func newMemoryBudget(limit uint64, s *Spec) *memoryBudget {
	b := &memoryBudget{limit: limit}
	n := s.MemoryNeed()
	b.held.Store(satAdd(n.Prompts, n.InFlight))
	return b
}

// add charges r and stops the run once it is over budget.
func (b *memoryBudget) add(r *prober.Result) {
	if err := b.charge(r); err != nil && b.stop != nil {
		b.stop(err)
	}
}

// charge adds what the summary keeps of r and returns ErrMemoryBudget,
// with the figures, once the total passes the limit.
func (b *memoryBudget) charge(r *prober.Result) error {
	kept := satAdd(keptBytesPerRequest, satMul(uint64(max(r.OutputTokens, len(r.Events), 0)), keptBytesPerOutputToken))
	held := b.held.Add(kept)
	if held < kept { // wrapped
		held = math.MaxUint64
	}
	if held > b.limit {
		return fmt.Errorf("%w: about %.0f MiB held (prompts, requests in flight and the outputs kept for the record), more than %.0f MiB; lower num_prompts or random_output_len",
			ErrMemoryBudget, float64(held)/(1<<20), float64(b.limit)/(1<<20))
	}
	return nil
}
