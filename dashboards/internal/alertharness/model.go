package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// Model is the latency and failure model of one probed inference server, as
// a continuous prober sees it. Every number here is an assumption of the
// harness, not a measurement of a server; the defaults describe a healthy
// mid-sized deployment: TTFT around 300 ms, a daily load cycle, a few short
// spikes a day, a deploy every other day, rare timeouts.
type Model struct {
	ProbeInterval time.Duration

	// TTFTMedian is the median TTFT in seconds at the mean load; TTFTSigma
	// the sigma of its lognormal spread (0.25: p99 about 1.8x the median).
	TTFTMedian, TTFTSigma float64
	// ITLMedian is the median gap between tokens in seconds. Each probe draws
	// a level (ITLProbeSigma: the batch it landed in) and each gap varies
	// around it (ITLSigma). OutputTokens gaps+1 tokens per probe.
	ITLMedian, ITLProbeSigma, ITLSigma float64
	OutputTokens                       int

	// DailyAmplitude scales every latency by 1 + A*sin(2π t/24h + phase):
	// the load of a day.
	DailyAmplitude float64

	// Spikes: a Poisson number per day, each lasting SpikeMin..SpikeMax and
	// multiplying latency by SpikeFactorMin..SpikeFactorMax.
	SpikesPerDay                   float64
	SpikeMin, SpikeMax             time.Duration
	SpikeFactorMin, SpikeFactorMax float64

	// Deploys: a Poisson number per day; each one moves the latency level
	// for good by a lognormal factor (DeployShiftSigma) and, for DeployBlip,
	// fails DeployFailRatio of probes and slows the rest by 1.5x.
	DeploysPerDay, DeployShiftSigma float64
	DeployBlip                      time.Duration
	DeployFailRatio                 float64

	// TimeoutRatio of probes time out (no first token) at any time.
	TimeoutRatio float64

	// Answer checks: each successful probe's answer is judged by one
	// check; CheckFailRatio of answers fail it and CheckErrorRatio are cut
	// before they can be judged, at any time (a sampled golden answer is
	// sometimes wrong).
	CheckFailRatio, CheckErrorRatio float64

	// Conversations: each probe tick also runs one conversation of
	// ConversationTurns turns. The cold first turn's TTFT has the median
	// ColdTTFTMedian, a warm turn served from the prefix cache
	// WarmTTFTMedian, and a warm turn the cache does not serve
	// UncachedWarmFactor times the cold turn's (its history is longer than
	// the first message); all with TTFTSigma's spread and the server's
	// level. A turn fails as a probe does, and a failed turn ends the
	// conversation.
	ConversationTurns                                  int
	ColdTTFTMedian, WarmTTFTMedian, UncachedWarmFactor float64

	// Live headroom: the target's last capacity check found Capacity
	// requests per second; the server's traffic is TrafficMean of it,
	// scaled by the daily cycle (TrafficAmplitude), and the exporter
	// reads it as a one-minute rate of a Poisson count.
	Capacity, TrafficMean, TrafficAmplitude float64
}

// DefaultModel is the healthy server every table in the docs is measured on.
func DefaultModel() Model {
	return Model{
		ProbeInterval:  15 * time.Second,
		TTFTMedian:     0.3,
		TTFTSigma:      0.25,
		ITLMedian:      0.02,
		ITLProbeSigma:  0.1,
		ITLSigma:       0.3,
		OutputTokens:   32,
		DailyAmplitude: 0.15,
		SpikesPerDay:   4,
		SpikeMin:       30 * time.Second, SpikeMax: 3 * time.Minute,
		SpikeFactorMin: 2, SpikeFactorMax: 4,
		DeploysPerDay: 0.5, DeployShiftSigma: 0.05,
		DeployBlip: time.Minute, DeployFailRatio: 0.3,
		TimeoutRatio:      0.001,
		CheckFailRatio:    0.02,
		CheckErrorRatio:   0.005,
		ConversationTurns: 3,
		ColdTTFTMedian:    1, WarmTTFTMedian: 0.35, UncachedWarmFactor: 1.15,
		Capacity: 100, TrafficMean: 0.5, TrafficAmplitude: 0.3,
	}
}

// Probe is one finished probe of the model.
type Probe struct {
	At      time.Duration // since the start of the series
	Outcome string        // the exporter's outcome label
	TTFT    float64       // seconds; 0 when the probe got no token
	ITLs    []float64     // gaps between tokens
	TPOT    float64
	// Check is the answer check's result (pass, fail, error); empty when
	// the probe failed and was not judged.
	Check string
	// Turns are the TTFTs of the conversation's successful turns, from
	// the first; a failed turn ends it.
	Turns []float64
}

// Scenario changes the server from At on.
type Scenario struct {
	Name string
	// TTFTFactor and ITLFactor multiply latency (0 means 1).
	TTFTFactor, ITLFactor float64
	// FailRatio of probes fail with an HTTP 5xx.
	FailRatio float64
	// CheckFailRatio of answers fail their check (0: the model's).
	CheckFailRatio float64
	// CacheLost: the prefix cache serves no warm turn.
	CacheLost bool
	// LoadRatio sets the server's traffic to this share of its capacity
	// (0: the model's daily cycle).
	LoadRatio float64
	// OtherTargets adds healthy targets next to the affected one, to check
	// that an alert names only the target that is down.
	OtherTargets int
	// Expect is the alert the scenario must raise and Within its target
	// time to fire; empty for none.
	Expect string
	Within time.Duration
}

type window struct {
	from, to time.Duration
	factor   float64
}

// Server draws the probes of one target.
type Server struct {
	m   Model
	rng *rand.Rand
	// sig draws the answer checks, conversations and traffic, apart from
	// rng so that the latency and failure draws stay those of the seed.
	sig    *rand.Rand
	phase  float64
	spikes []window
	blips  []window
	shifts []window // from: deploy time, factor: cumulative level after it
}

// NewServer lays out spikes and deploys over span.
func NewServer(m Model, seed uint64, span time.Duration) *Server {
	s := &Server{m: m, rng: rand.New(rand.NewPCG(seed, 0x5e7e)), sig: rand.New(rand.NewPCG(seed, 0xc4ec))}
	s.phase = s.rng.Float64() * 2 * math.Pi
	for t := s.expGap(m.SpikesPerDay); t < span && m.SpikesPerDay > 0; t += s.expGap(m.SpikesPerDay) {
		d := m.SpikeMin + time.Duration(s.rng.Float64()*float64(m.SpikeMax-m.SpikeMin))
		f := m.SpikeFactorMin + s.rng.Float64()*(m.SpikeFactorMax-m.SpikeFactorMin)
		s.spikes = append(s.spikes, window{t, t + d, f})
	}
	level := 1.0
	for t := s.expGap(m.DeploysPerDay); t < span && m.DeploysPerDay > 0; t += s.expGap(m.DeploysPerDay) {
		level *= math.Exp(s.rng.NormFloat64() * m.DeployShiftSigma)
		s.shifts = append(s.shifts, window{from: t, factor: level})
		s.blips = append(s.blips, window{t, t + m.DeployBlip, 1.5})
	}
	return s
}

func (s *Server) expGap(perDay float64) time.Duration {
	if perDay <= 0 {
		return math.MaxInt64
	}
	return time.Duration(s.rng.ExpFloat64() / perDay * float64(24*time.Hour))
}

func in(ws []window, t time.Duration) (window, bool) {
	for _, w := range ws {
		if t >= w.from && t < w.to {
			return w, true
		}
	}
	return window{}, false
}

// level is the latency multiplier of the healthy server at t.
func (s *Server) level(t time.Duration) float64 {
	f := 1 + s.m.DailyAmplitude*math.Sin(2*math.Pi*t.Hours()/24+s.phase)
	// The level a deploy left behind lasts until the next deploy.
	for i := len(s.shifts) - 1; i >= 0; i-- {
		if s.shifts[i].from <= t {
			f *= s.shifts[i].factor
			break
		}
	}
	if w, ok := in(s.spikes, t); ok {
		f *= w.factor
	}
	return f
}

// Probe draws the probe that ends at t; sc applies from scAt on (nil: none).
func (s *Server) Probe(t time.Duration, sc *Scenario, scAt time.Duration) Probe {
	p := Probe{At: t, Outcome: "success"}
	lvl := s.level(t)
	failRatio := s.m.TimeoutRatio
	ttftF, itlF := 1.0, 1.0
	if _, ok := in(s.blips, t); ok {
		lvl *= 1.5
		failRatio = math.Max(failRatio, s.m.DeployFailRatio)
	}
	if sc != nil && t >= scAt {
		if sc.TTFTFactor > 0 {
			ttftF = sc.TTFTFactor
		}
		if sc.ITLFactor > 0 {
			itlF = sc.ITLFactor
		}
		if sc.FailRatio > 0 {
			if s.rng.Float64() < sc.FailRatio {
				p.Outcome = "http_5xx"
				return p
			}
		}
	}
	if s.rng.Float64() < failRatio {
		p.Outcome = "timeout"
		return p
	}
	p.TTFT = s.m.TTFTMedian * lvl * ttftF * math.Exp(s.rng.NormFloat64()*s.m.TTFTSigma)
	probeITL := s.m.ITLMedian * math.Sqrt(lvl) * itlF * math.Exp(s.rng.NormFloat64()*s.m.ITLProbeSigma)
	var sum float64
	p.ITLs = make([]float64, s.m.OutputTokens-1)
	for i := range p.ITLs {
		g := probeITL * math.Exp(s.rng.NormFloat64()*s.m.ITLSigma)
		p.ITLs[i] = g
		sum += g
	}
	p.TPOT = sum / float64(len(p.ITLs))
	p.Check = s.check(sc != nil && t >= scAt, sc)
	p.Turns = s.conversation(lvl, failRatio, sc != nil && t >= scAt && sc.CacheLost)
	return p
}

// check draws the verdict of one answer.
func (s *Server) check(on bool, sc *Scenario) string {
	fail := s.m.CheckFailRatio
	if on && sc.CheckFailRatio > 0 {
		fail = sc.CheckFailRatio
	}
	switch u := s.sig.Float64(); {
	case u < fail:
		return "fail"
	case u < fail+s.m.CheckErrorRatio:
		return "error"
	}
	return "pass"
}

// conversation draws the TTFTs of one conversation's turns at the
// server's level lvl.
func (s *Server) conversation(lvl, failRatio float64, cacheLost bool) []float64 {
	var ttfts []float64
	for k := 1; k <= s.m.ConversationTurns; k++ {
		if s.sig.Float64() < failRatio {
			break
		}
		med := s.m.ColdTTFTMedian
		switch {
		case k > 1 && cacheLost:
			med *= s.m.UncachedWarmFactor
		case k > 1:
			med = s.m.WarmTTFTMedian
		}
		ttfts = append(ttfts, med*lvl*math.Exp(s.sig.NormFloat64()*s.m.TTFTSigma))
	}
	return ttfts
}

// Headroom is the exporter's headroom gauge at t: 1 minus the server's
// completed requests over the last minute, as a rate, over the capacity.
func (s *Server) Headroom(t time.Duration, sc *Scenario, scAt time.Duration) float64 {
	load := s.m.TrafficMean * (1 + s.m.TrafficAmplitude*math.Sin(2*math.Pi*t.Hours()/24+s.phase))
	if sc != nil && t >= scAt && sc.LoadRatio > 0 {
		load = sc.LoadRatio
	}
	// A one-minute count of a Poisson process, normal at these rates.
	n := load * s.m.Capacity * 60
	rate := (n + math.Sqrt(n)*s.sig.NormFloat64()) / 60
	return 1 - rate/s.m.Capacity
}
