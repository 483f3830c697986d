package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LoRA request distributions: sglang's --lora-request-distribution, and
// vLLM's --lora-assignment round-robin (its random is uniform).
const (
	LoRAUniform    = "uniform"
	LoRADistinct   = "distinct"
	LoRASkewed     = "skewed"
	LoRARoundRobin = "round-robin"
)

// LoRAPicker assigns a LoRA adapter name to each request as bench_serving
// does: uniform picks uniformly at random, distinct goes round-robin by
// request index, skewed picks name i with probability ∝ α^(−i). vLLM's
// round-robin is distinct without sglang's refusal of a single name
// (vllm/benchmarks/serve.py: lora_modules_list[i % len(lora_modules_list)]
// for request i).
type LoRAPicker struct {
	names []string
	dist  string
	cum   []float64 // cumulative skewed weights, normalised to 1
}

// NewLoRAPicker validates the names and distribution. With no names it
// returns nil, and a nil picker assigns no adapter.
func NewLoRAPicker(names []string, distribution string, alpha float64) (*LoRAPicker, error) {
	if len(names) == 0 {
		return nil, nil
	}
	p := &LoRAPicker{names: append([]string(nil), names...), dist: distribution}
	switch distribution {
	case LoRAUniform, LoRARoundRobin:
	case LoRADistinct, LoRASkewed:
		if len(names) < 2 {
			return nil, fmt.Errorf("lora distribution %s needs at least 2 names, got %d", distribution, len(names))
		}
		if distribution == LoRASkewed {
			if !(alpha > 1) || math.IsInf(alpha, 0) {
				return nil, fmt.Errorf("lora zipf alpha must be a finite number > 1, got %v", alpha)
			}
			p.cum = cumulativeWeights(len(names), func(i int) float64 { return math.Pow(alpha, -float64(i)) })
		}
	default:
		return nil, fmt.Errorf("unknown lora distribution %q (uniform, distinct, skewed, round-robin)", distribution)
	}
	return p, nil
}

// Pick returns the adapter for request i. Only uniform and skewed draw from r.
func (p *LoRAPicker) Pick(i int, r *rand.Rand) string {
	if p == nil {
		return ""
	}
	switch p.dist {
	case LoRADistinct, LoRARoundRobin:
		return p.names[i%len(p.names)]
	case LoRASkewed:
		return p.names[pickCumulative(p.cum, r)]
	default:
		return p.names[r.IntN(len(p.names))]
	}
}

// AssignLoRA sets Prompt.LoRA on every prompt, in order.
func AssignLoRA(prompts []Prompt, p *LoRAPicker, r *rand.Rand) {
	for i := range prompts {
		prompts[i].LoRA = p.Pick(i, r)
	}
}

// cumulativeWeights returns the normalised cumulative sums of w(0..n-1).
func cumulativeWeights(n int, w func(int) float64) []float64 {
	cum := make([]float64, n)
	sum := 0.0
	for i := range n {
		sum += w(i)
		cum[i] = sum
	}
	for i := range cum {
		cum[i] /= sum
	}
	cum[n-1] = 1 // guard against rounding leaving the last bucket short
	return cum
}

// pickCumulative draws an index from normalised cumulative weights.
func pickCumulative(cum []float64, r *rand.Rand) int {
	u := r.Float64()
	lo, hi := 0, len(cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if u < cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
