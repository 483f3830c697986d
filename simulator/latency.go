package simulator

import (
	"math"
	"math/rand/v2"
	"time"
)

// jitter draws a jitter for scale j from dist. It is pure given r.
func jitter(r *rand.Rand, j time.Duration, dist Distribution) time.Duration {
	if j <= 0 {
		return 0
	}
	if dist == Normal {
		return time.Duration(r.NormFloat64() * float64(j))
	}
	// Uniform in [-j, +j].
	return time.Duration((r.Float64()*2 - 1) * float64(j))
}

// ttft is the delay from admission to the first token.
func (c *Config) ttft(r *rand.Rand, promptTokens int) time.Duration {
	d := c.TTFT + time.Duration(promptTokens)*c.PrefillPerToken + jitter(r, c.TTFTJitter, c.Jitter)
	return max(d, 0)
}

// step is one decode step with running requests in the batch (this one
// included).
func (c *Config) step(r *rand.Rand, running int) time.Duration {
	d := c.ITL + time.Duration(max(running-1, 0))*c.ITLPerRunningRequest + jitter(r, c.ITLJitter, c.Jitter)
	return max(d, 0)
}

// zeroDecode reports whether decode steps never wait, so the decode loop can
// skip clocks and timers entirely.
func (c *Config) zeroDecode() bool {
	return c.ITL == 0 && c.ITLJitter == 0 && c.ITLPerRunningRequest == 0
}

// outputLen decides how many tokens a request produces and whether it ends
// by EOS (true) or by reaching maxTokens (false). A geometric EOS point with
// mean MeanOutputTokens applies unless ignoreEOS is set or minTokens already
// forces the maximum; it never falls below minTokens.
func (c *Config) outputLen(r *rand.Rand, maxTokens, minTokens int, ignoreEOS bool) (n int, eos bool) {
	if maxTokens <= 0 {
		return 0, false
	}
	if ignoreEOS || minTokens >= maxTokens {
		return maxTokens, false
	}
	// Inverse CDF of the geometric distribution on {1, 2, ...} with
	// success probability p = 1/mean.
	p := 1 / float64(c.MeanOutputTokens)
	k := 1
	if p < 1 {
		u := 1 - r.Float64() // (0, 1]
		k = int(math.Ceil(math.Log(u) / math.Log1p(-p)))
		k = max(k, 1)
	}
	k = max(k, minTokens)
	if k >= maxTokens {
		return maxTokens, false
	}
	return k, true
}
