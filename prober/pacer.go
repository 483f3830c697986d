package prober

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Pacer decides when the next request of a benchmark is due. It is a pure
// function of the time elapsed since the run started and of the number of
// requests already sent, after vegeta's Pacer.
//
// Subtleness ahead: unlike vegeta, wait may be negative. Every pacer here
// keeps an absolute schedule (the i-th arrival is at a fixed offset from the
// start), and a caller that fell behind gets told by how much: the next
// request was due -wait ago. Callers send at once when wait <= 0, and record
// elapsed+wait as the request's scheduled time, so that lag neither
// accumulates (vLLM's relative sleeps delivered 183 of 200 req/s) nor hides
// from the client queue time.
type Pacer interface {
	Pace(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool)
}

// pacerDuration converts float seconds to a Duration, rounding to the nanosecond.
func pacerDuration(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * 1e9))
}

// unpaced reports whether a rate means "no pacing at all".
func unpaced(rate float64) bool { return rate <= 0 || math.IsInf(rate, 1) }

// Constant sends Rate requests per second at evenly spaced absolute times:
// request i is due at i/Rate. A Rate of +Inf (or <= 0, as vegeta's zero
// frequency) is a burst: every request is due at the start, so one that
// waits for a concurrency slot counts the wait as client queue time, as
// bench_serving's tasks do when they queue on its semaphore.
type Constant struct {
	Rate float64 // requests per second
}

var _ Pacer = Constant{}

// Pace implements Pacer.
func (c Constant) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if unpaced(c.Rate) {
		return -elapsed, false
	}
	return pacerDuration(float64(sent)/c.Rate) - elapsed, false
}

// Gamma sends requests whose gaps are independent gamma draws with shape
// Burstiness and mean 1/Rate, as vLLM's --burstiness: 1 is a Poisson
// process, values below 1 are burstier, and +Inf degenerates to Constant.
// The first request is due at once; request i is due at the sum of the first
// i gaps, so the schedule is absolute and reproducible from the seed.
//
// Gamma owns its random source and keeps a cursor into the schedule, so it is
// not safe for concurrent use. Asking for an earlier request than the last
// one replays the schedule from the seed, which costs O(sent).
type Gamma struct {
	rate, shape float64
	seed        uint64
	src         *rand.PCG
	rng         *rand.Rand
	// The cursor: arrival k is due at at (in seconds, summed in float64 to
	// avoid rounding each gap to the nanosecond).
	k  uint64
	at float64
	// rateAt, if set, gives the rate for the gap before request i (ramp-up).
	rateAt func(i uint64) float64
}

var _ Pacer = (*Gamma)(nil)

// NewPoisson returns a Poisson pacer: exponential gaps with mean 1/rate,
// drawn from a PCG source seeded with seed.
func NewPoisson(rate float64, seed uint64) (*Gamma, error) {
	return NewGamma(rate, 1, seed)
}

// NewGamma returns a pacer with gamma-distributed gaps of shape burstiness
// and scale 1/(rate*burstiness), as vLLM's --burstiness. A rate of +Inf is a
// burst, as Constant's; a burstiness of +Inf gives constant gaps.
func NewGamma(rate, burstiness float64, seed uint64) (*Gamma, error) {
	if math.IsNaN(rate) || rate <= 0 {
		return nil, fmt.Errorf("request rate must be > 0, got %v", rate)
	}
	if math.IsNaN(burstiness) || burstiness <= 0 {
		return nil, fmt.Errorf("burstiness must be > 0, got %v", burstiness)
	}
	src := rand.NewPCG(seed, seed)
	return &Gamma{rate: rate, shape: burstiness, seed: seed, src: src, rng: rand.New(src)}, nil
}

// RampStrategy is how a ramp moves from its start rate to its end rate.
type RampStrategy string

// Ramp strategies, as vLLM's --ramp-up-strategy.
const (
	RampLinear      RampStrategy = "linear"
	RampExponential RampStrategy = "exponential"
)

// NewRamp returns a pacer whose rate moves from startRPS to endRPS over total
// requests, as vLLM's --ramp-up-strategy: the gap before request i is drawn
// at the rate for progress i/(total-1) (linear: start+(end-start)*progress;
// exponential: start*(end/start)^progress), with gamma gaps of shape
// burstiness (1 = Poisson, +Inf = constant). Requests after total keep the
// end rate.
func NewRamp(strategy RampStrategy, startRPS, endRPS float64, total uint64, burstiness float64, seed uint64) (*Gamma, error) {
	if !(startRPS > 0) || !(endRPS > 0) || math.IsInf(startRPS, 0) || math.IsInf(endRPS, 0) {
		return nil, fmt.Errorf("ramp-up rates must be finite and > 0, got %v and %v", startRPS, endRPS)
	}
	if total == 0 {
		return nil, errors.New("ramp-up needs the number of requests")
	}
	g, err := NewGamma(endRPS, burstiness, seed)
	if err != nil {
		return nil, err
	}
	span := float64(max(total-1, 1))
	switch strategy {
	case RampLinear:
		g.rateAt = func(i uint64) float64 {
			p := math.Min(float64(i)/span, 1)
			return startRPS + (endRPS-startRPS)*p
		}
	case RampExponential:
		g.rateAt = func(i uint64) float64 {
			p := math.Min(float64(i)/span, 1)
			return startRPS * math.Pow(endRPS/startRPS, p)
		}
	default:
		return nil, fmt.Errorf("unknown ramp-up strategy %q (want linear or exponential)", strategy)
	}
	return g, nil
}

// Pace implements Pacer.
func (g *Gamma) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if g.rateAt == nil && unpaced(g.rate) {
		return -elapsed, false
	}
	if sent < g.k {
		g.src.Seed(g.seed, g.seed)
		g.k, g.at = 0, 0
	}
	for g.k < sent {
		g.k++
		g.at += g.gap(g.k)
	}
	return pacerDuration(g.at) - elapsed, false
}

// gap draws the gap before request i.
func (g *Gamma) gap(i uint64) float64 {
	rate := g.rate
	if g.rateAt != nil {
		rate = g.rateAt(i)
	}
	switch {
	case math.IsInf(g.shape, 1):
		return 1 / rate
	case g.shape == 1:
		return g.rng.ExpFloat64() / rate
	default:
		return gammaRand(g.rng, g.shape) / (rate * g.shape)
	}
}

// gammaRand draws from Gamma(shape, 1) with Marsaglia and Tsang's method
// (ACM TOMS 26(3), 2000), boosting shapes below 1 with U^(1/shape).
func gammaRand(r *rand.Rand, shape float64) float64 {
	boost := 1.0
	if shape < 1 {
		// 1-Float64 is in (0, 1], so the power never gives 0^(1/a) = 0 by
		// accident of the generator returning exactly 0.
		boost = math.Pow(1-r.Float64(), 1/shape)
		shape++
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * boost
		}
	}
}

// TraceReplay replays arrival offsets, as a trace's timestamps: request i is due
// at (Offsets[i]-Offsets[0])*Slowdown, and the pacer stops after the last
// offset. Offsets must be sorted; the caller sends prompts in the same order.
type TraceReplay struct {
	offsets  []time.Duration
	slowdown float64
}

var _ Pacer = (*TraceReplay)(nil)

// NewTraceReplay returns a trace-replay pacer. A slowdown of 2 replays at half
// speed; 0 means 1.
func NewTraceReplay(offsets []time.Duration, slowdown float64) (*TraceReplay, error) {
	if slowdown == 0 {
		slowdown = 1
	}
	if !(slowdown > 0) || math.IsInf(slowdown, 1) {
		return nil, fmt.Errorf("slowdown factor must be finite and > 0, got %v", slowdown)
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			return nil, fmt.Errorf("trace timestamps must be sorted: request %d at %v is before request %d at %v",
				i, offsets[i], i-1, offsets[i-1])
		}
	}
	return &TraceReplay{offsets: offsets, slowdown: slowdown}, nil
}

// Pace implements Pacer.
func (t *TraceReplay) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if sent >= uint64(len(t.offsets)) {
		return 0, true
	}
	due := t.offsets[sent] - t.offsets[0]
	if t.slowdown != 1 {
		due = pacerDuration(due.Seconds() * t.slowdown)
	}
	return due - elapsed, false
}

// MaxDuration wraps a pacer so that it stops once the next request would be
// due at or after Max. A request already due before Max is still sent, even
// by a caller running late.
type MaxDuration struct {
	Pacer Pacer
	Max   time.Duration
}

var _ Pacer = MaxDuration{}

// Pace implements Pacer.
func (m MaxDuration) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	wait, stop := m.Pacer.Pace(elapsed, sent)
	if stop || elapsed+wait >= m.Max {
		return 0, true
	}
	return wait, false
}
