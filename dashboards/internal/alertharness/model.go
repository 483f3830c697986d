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
		TimeoutRatio: 0.001,
	}
}

// Probe is one finished probe of the model.
type Probe struct {
	At      time.Duration // since the start of the series
	Outcome string        // the exporter's outcome label
	TTFT    float64       // seconds; 0 when the probe got no token
	ITLs    []float64     // gaps between tokens
	TPOT    float64
}

// Scenario changes the server from At on.
type Scenario struct {
	Name string
	// TTFTFactor and ITLFactor multiply latency (0 means 1).
	TTFTFactor, ITLFactor float64
	// FailRatio of probes fail with an HTTP 5xx.
	FailRatio float64
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
	m      Model
	rng    *rand.Rand
	phase  float64
	spikes []window
	blips  []window
	shifts []window // from: deploy time, factor: cumulative level after it
}

// NewServer lays out spikes and deploys over span.
func NewServer(m Model, seed uint64, span time.Duration) *Server {
	s := &Server{m: m, rng: rand.New(rand.NewPCG(seed, 0x5e7e))}
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
	return p
}
