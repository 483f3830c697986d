package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// The dynamic dataset's prompt sources and arrival processes, as sglang's
// (python/sglang/benchmark/datasets/dynamic.py: SOURCES, ARRIVAL_PATTERNS).
var (
	dynamicSources  = []string{"random-ids", "sharegpt", "generated-shared-prefix"}
	dynamicArrivals = []string{"constant", "poisson"}
)

// maxDynamicRequests bounds a plan's requests: each phase's count is
// duration × rate, and a plan is read whole before the run.
const maxDynamicRequests = 10_000_000

// A plan's prompts are made before the run, a pool per distinct phase
// shape: these bound what one plan can ask for (sglang's default pool is
// 8 prompts).
const (
	maxDynamicPool       = 4096    // prompt_pool_size
	maxDynamicLen        = 1 << 20 // input_len, output_len (tokens)
	maxDynamicPoolTokens = 1 << 26 // prompt_pool_size × input_len
)

// DynamicPhase is one phase of a --dynamic-workload-path plan: requests
// of one shape, at one rate, for a duration. Fields are sglang's.
type DynamicPhase struct {
	Name           string         `json:"name"`
	Duration       float64        `json:"duration"`     // seconds
	RequestRate    float64        `json:"request_rate"` // requests per second
	InputLen       float64        `json:"input_len"`
	OutputLen      float64        `json:"output_len"`
	MaxConcurrency *float64       `json:"max_concurrency"` // the phase's requests in flight at most; nil: no cap
	RangeRatio     *float64       `json:"range_ratio"`     // in (0, 1]; nil: 1
	ExtraBody      map[string]any `json:"extra_request_body"`
	Source         string         `json:"source"`          // empty: the plan's
	ArrivalPattern string         `json:"arrival_pattern"` // empty: the plan's
}

// DynamicPlan is a --dynamic-workload-path file.
type DynamicPlan struct {
	Phases         []DynamicPhase `json:"phases"`
	PromptPoolSize *float64       `json:"prompt_pool_size"` // nil: 8
	Source         string         `json:"source"`           // empty: random-ids
	ArrivalPattern string         `json:"arrival_pattern"`  // empty: constant
}

// LoadDynamicPlan reads and checks a plan as sglang's load_workload_plan
// does, with its refusals (every problem at once, each naming its field).
// Unlike sglang, a key it does not know is refused, so that a misspelt
// field (max_concurency) does not silently go without its effect.
func LoadDynamicPlan(path string) (*DynamicPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dynamic workload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var plan DynamicPlan
	if err := dec.Decode(&plan); err != nil {
		return nil, fmt.Errorf("dynamic workload %s: invalid JSON: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("dynamic workload %s: invalid JSON: more after the plan's object", path)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	positive := func(v float64, field string) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			bad("%s must be finite and positive, got %v", field, v)
			return false
		}
		return true
	}
	positiveInt := func(v float64, field string) {
		if positive(v, field) && v != math.Trunc(v) {
			bad("%s must be an integer, got %v", field, v)
		}
	}
	if len(plan.Phases) == 0 {
		bad("phases: the plan must contain at least one phase")
	}
	pool := 8.0
	if plan.PromptPoolSize != nil {
		positiveInt(*plan.PromptPoolSize, "prompt_pool_size")
		if pool = *plan.PromptPoolSize; pool > maxDynamicPool {
			bad("prompt_pool_size must be at most %d, got %v", maxDynamicPool, pool)
		}
	}
	names := map[string]bool{}
	total := 0.0
	for i, ph := range plan.Phases {
		prefix := fmt.Sprintf("phases[%d]", i)
		switch {
		case strings.TrimSpace(ph.Name) == "":
			bad("%s.name must be a non-empty string", prefix)
		case names[ph.Name]:
			bad("%s.name: duplicate phase %q", prefix, ph.Name)
		}
		names[ph.Name] = true
		okDur := positive(ph.Duration, prefix+".duration")
		okRate := positive(ph.RequestRate, prefix+".request_rate")
		if okDur && okRate {
			total += math.Ceil(ph.Duration * ph.RequestRate)
		}
		positiveInt(ph.InputLen, prefix+".input_len")
		positiveInt(ph.OutputLen, prefix+".output_len")
		for _, l := range []struct {
			v    float64
			name string
		}{{ph.InputLen, ".input_len"}, {ph.OutputLen, ".output_len"}} {
			if l.v > maxDynamicLen {
				bad("%s%s must be at most %d tokens, got %v", prefix, l.name, maxDynamicLen, l.v)
			}
		}
		if ph.InputLen <= maxDynamicLen && pool <= maxDynamicPool && pool*ph.InputLen > maxDynamicPoolTokens {
			bad("%s: prompt_pool_size × input_len is %v tokens made before the run, more than %d", prefix, pool*ph.InputLen, maxDynamicPoolTokens)
		}
		if ph.MaxConcurrency != nil {
			positiveInt(*ph.MaxConcurrency, prefix+".max_concurrency")
		}
		if ph.RangeRatio != nil && positive(*ph.RangeRatio, prefix+".range_ratio") && *ph.RangeRatio > 1 {
			bad("%s.range_ratio must be at most 1, got %v", prefix, *ph.RangeRatio)
		}
		if src := ph.source(&plan); !slices.Contains(dynamicSources, src) {
			bad("%s.source must be one of %s, got %q", prefix, strings.Join(dynamicSources, ", "), src)
		}
		if arr := ph.arrival(&plan); !slices.Contains(dynamicArrivals, arr) {
			bad("%s.arrival_pattern must be one of %s, got %q", prefix, strings.Join(dynamicArrivals, ", "), arr)
		}
	}
	if total > maxDynamicRequests {
		// A Poisson phase can exceed duration × rate; the bound is for
		// a plan that asks for far too much, not a tight one.
		bad("phases: about %.0f requests in all (duration × request_rate), more than %d", total, maxDynamicRequests)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dynamic workload %s: %w", path, err)
	}
	return &plan, nil
}

func (ph *DynamicPhase) source(plan *DynamicPlan) string {
	switch {
	case ph.Source != "":
		return ph.Source
	case plan.Source != "":
		return plan.Source
	}
	return "random-ids"
}

func (ph *DynamicPhase) arrival(plan *DynamicPlan) string {
	switch {
	case ph.ArrivalPattern != "":
		return ph.ArrivalPattern
	case plan.ArrivalPattern != "":
		return plan.ArrivalPattern
	}
	return "constant"
}

func (ph *DynamicPhase) rangeRatio() float64 {
	if ph.RangeRatio == nil {
		return 1
	}
	return *ph.RangeRatio
}

// dynamicArrivalOffsets are a phase's arrival times from its start, in
// seconds, as sglang's generate_arrival_offsets: constant sends request i
// at i/rate while that is before the duration (at least one); poisson
// sends one at 0, then after exponential gaps of mean 1/rate while the
// time is before the duration.
func dynamicArrivalOffsets(duration, rate float64, pattern string, r *rand.Rand) []float64 {
	if pattern == "constant" {
		n := max(1, int(math.Ceil(duration*rate)))
		out := make([]float64, 0, n)
		for i := range n {
			if t := float64(i) / rate; t < duration {
				out = append(out, t)
			}
		}
		return out
	}
	out := []float64{0}
	for t := r.ExpFloat64() / rate; t < duration; t += r.ExpFloat64() / rate {
		out = append(out, t)
	}
	return out
}

// dynamicDataset is sglang's "dynamic": a plan of phases, each sending
// requests of its own lengths at its own rate and arrival process for its
// duration, one phase after the other. Each request carries its time
// from the run's start (the run replays them), its phase's name and
// concurrency cap, and its phase's extra_request_body.
type dynamicDataset struct {
	opts Options
	tok  Tokenizer
	plan *DynamicPlan
}

func newDynamic(opts Options, tok Tokenizer) (Dataset, error) {
	if opts.DynamicWorkloadPath == "" {
		return nil, errors.New("dynamic: the workload plan is required (--dynamic-workload-path)")
	}
	plan, err := LoadDynamicPlan(opts.DynamicWorkloadPath)
	if err != nil {
		return nil, err
	}
	for i, ph := range plan.Phases {
		if ph.source(plan) == "sharegpt" && opts.DatasetPath == "" {
			return nil, fmt.Errorf("dynamic workload: phases[%d].source sharegpt takes its text from --dataset-path, which is unset", i)
		}
	}
	return &dynamicDataset{opts: opts, tok: tok, plan: plan}, nil
}

// dynamicPoolKey is what makes two phases share their prompts, as in
// sglang: the same source, lengths and range ratio.
type dynamicPoolKey struct {
	source        string
	input, output int
	ratio         float64
}

// Generate makes every phase's requests; n (--num-prompts) is not read:
// the plan's durations and rates decide the count, as in sglang. Each
// distinct (source, lengths, ratio) gets a pool of prompt_pool_size
// prompts (default 8), made by the dataset of that name with the phase's
// lengths, and the phase's requests take them in turn.
func (d *dynamicDataset) Generate(_ int, r *rand.Rand) ([]Prompt, error) {
	poolSize := 8
	if d.plan.PromptPoolSize != nil {
		poolSize = int(*d.plan.PromptPoolSize)
	}
	pools := map[dynamicPoolKey][]Prompt{}
	var out []Prompt
	start := 0.0
	for _, ph := range d.plan.Phases {
		offsets := dynamicArrivalOffsets(ph.Duration, ph.RequestRate, ph.arrival(d.plan), r)
		key := dynamicPoolKey{ph.source(d.plan), int(ph.InputLen), int(ph.OutputLen), ph.rangeRatio()}
		pool, ok := pools[key]
		if !ok {
			var err error
			if pool, err = d.pool(key, poolSize, r); err != nil {
				return nil, fmt.Errorf("dynamic phase %q: %w", ph.Name, err)
			}
			pools[key] = pool
		}
		limit := 0
		if ph.MaxConcurrency != nil {
			limit = int(*ph.MaxConcurrency)
		}
		for k, off := range offsets {
			p := pool[k%len(pool)]
			p.Timestamp = time.Duration(math.Round((start + off) * float64(time.Second)))
			p.Phase, p.PhaseMaxConcurrency = ph.Name, limit
			if ph.ExtraBody != nil {
				p.ExtraBody = ph.ExtraBody // the phase's replaces the row's, as in sglang
			}
			out = append(out, p)
		}
		start += ph.Duration
	}
	return out, nil
}

// pool makes n prompts of one shape. random-ids and sharegpt are sglang's
// random requests (sharegpt drawing its text from --dataset-path, as our
// random dataset does); generated-shared-prefix is min(4, n) groups with
// a system prompt of 3/4 and a question of 1/4 of nine tenths of the
// input length, in order, as sglang's. Our random prompts have their
// exact lengths already, so sglang's fit_prompt_length is not needed for
// them; shared-prefix prompts keep the lengths their generator counted.
func (d *dynamicDataset) pool(k dynamicPoolKey, n int, r *rand.Rand) ([]Prompt, error) {
	o := d.opts
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = k.input, k.output, k.ratio
	name := k.source
	switch k.source {
	case "random-ids":
		o.DatasetPath = ""
	case "sharegpt":
		name = "random"
	case "generated-shared-prefix":
		groups := min(4, n)
		budget := max(2, k.input*9/10)
		o.GSPNumGroups, o.GSPPromptsPerGroup = groups, (n+groups-1)/groups
		o.GSPSystemPromptLen = max(1, budget*3/4)
		o.GSPQuestionLen = max(1, budget-o.GSPSystemPromptLen)
		o.GSPOutputLen, o.GSPRangeRatio, o.GSPOrdered, o.GSPNumTurns = k.output, k.ratio, true, 1
	}
	ds, err := New(name, o, d.tok)
	if err != nil {
		return nil, err
	}
	ps, err := ds.Generate(n, r)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, errors.New("no prompt made")
	}
	return ps[:min(n, len(ps))], nil
}
