package simulator

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Distribution is the shape of latency jitter.
type Distribution string

// The jitter distributions. For Uniform, a jitter J draws from [-J, +J]; for
// Normal, J is the standard deviation. Latencies are clamped at zero.
const (
	Uniform Distribution = "uniform"
	Normal  Distribution = "normal"
)

// Fault is a failure the simulator can inject. It is a closed enum; the names
// are accepted in the X-Servingprobe-Fault header and in --sim.fault-rate.
//
// This is the project's one catalogue of server-side misbehaviour: what an
// inference server, or the gateway in front of it, can answer to a
// well-formed request. The robustness tests take these from the simulator
// and nowhere else; the internal hostile test server keeps only the abuse
// that is not an answer a model server gives (endless or oversized bodies,
// compression bombs, byte-by-byte dribbling, redirect loops, credential
// echo traps, broken TLS, refused connections).
type Fault string

// The faults. "Mid-stream" means right after the chunk that reaches half of
// the output tokens (at least one token).
const (
	FaultNone Fault = ""
	// Fault401, Fault403, Fault429, Fault500 and Fault503 answer with that
	// status and the protocol's JSON error body before any token; 429 sets
	// Retry-After. (A 404 needs no fault: a request naming another model
	// gets the server's own.)
	Fault401 Fault = "401"
	Fault403 Fault = "403"
	Fault429 Fault = "429"
	Fault500 Fault = "500"
	Fault503 Fault = "503"
	// FaultStallBeforeHeaders holds the request without sending a byte.
	FaultStallBeforeHeaders Fault = "stall-before-headers"
	// FaultStallAfterHeaders sends 200 and the headers, then holds.
	FaultStallAfterHeaders Fault = "stall-after-headers"
	// FaultStallMidStream holds after half of the tokens.
	FaultStallMidStream Fault = "stall-mid-stream"
	// FaultResetMidStream aborts the TCP connection with RST (SO_LINGER 0)
	// after half of the tokens.
	FaultResetMidStream Fault = "reset-mid-stream"
	// FaultMalformedChunk inserts one event whose JSON is cut short, then
	// carries on normally.
	FaultMalformedChunk Fault = "malformed-chunk"
	// FaultErrorInStream sends the server's in-stream error object after
	// half of the tokens, then ends the stream as that server does.
	FaultErrorInStream Fault = "error-in-stream"
	// FaultAbortInStream ends the stream after half of the tokens with the
	// server's own abort: finish_reason "abort" on the OpenAI endpoints
	// (vLLM), an abort finish reason with status_code 503 on /generate
	// (sglang), and the error object on generate_stream, where Triton has
	// no abort of its own.
	FaultAbortInStream Fault = "abort-in-stream"
	// FaultNoDone sends every token, the finish and usage chunks, and ends
	// the response cleanly without "data: [DONE]".
	FaultNoDone Fault = "no-done"
	// FaultTruncate ends the response cleanly after half of the tokens,
	// with no finish chunk and no [DONE].
	FaultTruncate Fault = "truncate"
	// FaultHTML200 answers with status 200 and a text/html error page, as
	// a gateway in front of a dead server can.
	FaultHTML200 Fault = "html-200"
	// FaultJSONNotStream answers a stream request with the whole
	// non-streaming JSON body, as a server that ignores "stream" does.
	FaultJSONNotStream Fault = "json-not-stream"
	// FaultMalformedToolCall streams a chat request's tool call (one that
	// declares tools) with its arguments cut short of their closing
	// brace: a well-formed stream whose answer is wrong, for the answer
	// checks.
	FaultMalformedToolCall Fault = "malformed-tool-call"
)

// Faults lists every injectable fault in a stable order. The order is the
// order of the draw in FaultRates: append new faults at the end, so that a
// seeded run draws the same faults as before.
var Faults = []Fault{
	Fault500, Fault503, Fault429,
	FaultStallBeforeHeaders, FaultStallAfterHeaders, FaultStallMidStream,
	FaultResetMidStream, FaultMalformedChunk, FaultErrorInStream,
	FaultAbortInStream, FaultNoDone, FaultTruncate,
	Fault401, Fault403, FaultHTML200, FaultJSONNotStream,
	FaultMalformedToolCall,
}

// ParseFault returns the Fault named s.
func ParseFault(s string) (Fault, error) {
	f := Fault(strings.TrimSpace(s))
	if slices.Contains(Faults, f) {
		return f, nil
	}
	return FaultNone, fmt.Errorf("unknown fault %q", s)
}

// Config is the simulator's behaviour. Durations are per request unless said
// otherwise. The zero value is not useful; start from DefaultConfig.
type Config struct {
	// Model is the served model name, reported by /v1/models and echoed in
	// responses. A request naming another model gets vLLM's 404.
	Model string
	// MaxModelLen bounds prompt plus output tokens, as vLLM's
	// --max-model-len does; a request over it gets a 400.
	MaxModelLen int

	// TTFT is the base time from admission to the first token.
	TTFT time.Duration
	// TTFTJitter is added to TTFT, drawn from Jitter.
	TTFTJitter time.Duration
	// PrefillPerToken is added to TTFT for every prompt token.
	PrefillPerToken time.Duration
	// ITL is the time of one decode step, the gap between chunks.
	ITL time.Duration
	// ITLJitter is added to each step, drawn from Jitter.
	ITLJitter time.Duration
	// ITLPerRunningRequest is added to each step for every other running
	// request, so that batch size slows decoding.
	ITLPerRunningRequest time.Duration
	// Jitter is the jitter distribution.
	Jitter Distribution
	// TokensPerChunk is the tokens carried by one decode step's chunk.
	TokensPerChunk int
	// MaxRunningRequests caps concurrent generation; others wait FIFO.
	// Zero means no cap.
	MaxRunningRequests int
	// MeanOutputTokens is the mean of the geometric EOS point used when
	// neither ignore_eos nor a minimum length forces the full length.
	MeanOutputTokens int

	// Coalesce buffers events and writes only when CoalesceBytes fill or
	// the stream ends.
	Coalesce bool
	// CoalesceBytes is the coalescing buffer size.
	CoalesceBytes int

	// Seed makes token text, jitter, EOS points, fault draws and generated
	// ids reproducible (per request, in arrival order).
	Seed uint64

	// FaultRates maps a fault to the probability that a request gets it.
	// The probabilities must sum to at most 1.
	FaultRates map[Fault]float64
	// Admin serves /admin/live, where latency factors and a failure ratio
	// can be changed while the simulator runs (see Live). Off by default.
	Admin bool
	// HeaderFaults honours the X-Servingprobe-Fault request header.
	HeaderFaults bool
	// FaultStall is how long stall faults hold before carrying on; zero
	// holds until the client goes away.
	FaultStall time.Duration
	// RetryAfter is the Retry-After of the 429 fault, rounded up to
	// seconds.
	RetryAfter time.Duration

	// TruthSize is how many finished requests' ground truth is kept; zero
	// records none (and costs nothing).
	TruthSize int
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes int64
	// CheckHistory remembers every reply generated and refuses (400) a
	// chat request with an assistant turn that is not one of them: a
	// multi-turn client must carry the replies it really got.
	CheckHistory bool
	// StateMetrics adds vLLM's per-request metrics object to the usage
	// chunk of the OpenAI routes (time_to_first_token_ms from the
	// request's arrival to its first token's due time, queue_time_ms from
	// arrival to a running slot): the simulator's own truth in the shape
	// vLLM states it. Off by default: vLLM sends it only when asked.
	StateMetrics bool

	// MetricsNames is the engine whose metric names, labels and bucket
	// layouts GET /metrics serves: vllm or sglang (see metrics.go).
	MetricsNames MetricsNames
	// KVCacheTokens is the KV cache's size in tokens: the denominator of
	// the KV-cache usage gauge and the prefix cache's capacity.
	KVCacheTokens int
}

// DefaultConfig returns realistic defaults for a small model on one GPU.
func DefaultConfig() Config {
	return Config{
		Model:              "servingprobe-sim",
		MaxModelLen:        32768,
		TTFT:               50 * time.Millisecond,
		TTFTJitter:         5 * time.Millisecond,
		PrefillPerToken:    20 * time.Microsecond,
		ITL:                10 * time.Millisecond,
		ITLJitter:          1 * time.Millisecond,
		Jitter:             Uniform,
		TokensPerChunk:     1,
		MaxRunningRequests: 256,
		MeanOutputTokens:   256,
		CoalesceBytes:      32 << 10,
		Seed:               1,
		HeaderFaults:       true,
		RetryAfter:         time.Second,
		TruthSize:          1024,
		MaxRequestBytes:    16 << 20,
		MetricsNames:       MetricsVLLM,
		// 256 Ki tokens: a small model's KV cache on one GPU, and a
		// bound on the prefix cache's memory (an entry per block, per
		// token under sglang's names).
		KVCacheTokens: 256 << 10,
	}
}

// Validate returns every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, a...)...))
	}
	if c.Model == "" {
		bad("model", "must be set")
	}
	if c.MaxModelLen < 1 {
		bad("max_model_len", "must be positive, got %d", c.MaxModelLen)
	}
	for name, d := range map[string]time.Duration{
		"ttft": c.TTFT, "ttft_jitter": c.TTFTJitter, "prefill_per_token": c.PrefillPerToken,
		"itl": c.ITL, "itl_jitter": c.ITLJitter, "itl_per_running_request": c.ITLPerRunningRequest,
		"fault_stall": c.FaultStall, "retry_after": c.RetryAfter,
	} {
		if d < 0 {
			bad(name, "must not be negative, got %s", d)
		}
	}
	if c.Jitter != Uniform && c.Jitter != Normal {
		bad("jitter", "must be %q or %q, got %q", Uniform, Normal, c.Jitter)
	}
	if c.TokensPerChunk < 1 {
		bad("tokens_per_chunk", "must be at least 1, got %d", c.TokensPerChunk)
	}
	if c.MaxRunningRequests < 0 {
		bad("max_running_requests", "must not be negative, got %d", c.MaxRunningRequests)
	}
	if c.MeanOutputTokens < 1 {
		bad("mean_output_tokens", "must be at least 1, got %d", c.MeanOutputTokens)
	}
	if c.Coalesce && c.CoalesceBytes < 1 {
		bad("coalesce_bytes", "must be positive with coalescing on, got %d", c.CoalesceBytes)
	}
	var sum float64
	for _, f := range Faults {
		p, ok := c.FaultRates[f]
		if !ok {
			continue
		}
		if math.IsNaN(p) || p < 0 || p > 1 {
			bad("fault_rates["+string(f)+"]", "must be in [0, 1], got %v", p)
			continue
		}
		sum += p
	}
	for f := range c.FaultRates {
		if !slices.Contains(Faults, f) {
			bad("fault_rates", "unknown fault %q", f)
		}
	}
	if sum > 1+1e-9 {
		bad("fault_rates", "probabilities sum to %v, more than 1", sum)
	}
	if c.TruthSize < 0 {
		bad("truth_size", "must not be negative, got %d", c.TruthSize)
	}
	if c.MetricsNames != MetricsVLLM && c.MetricsNames != MetricsSGLang {
		bad("metrics_names", "must be %q or %q, got %q", MetricsVLLM, MetricsSGLang, c.MetricsNames)
	}
	if c.KVCacheTokens < 1 {
		bad("kv_cache_tokens", "must be positive, got %d", c.KVCacheTokens)
	}
	if c.MaxRequestBytes < 1 {
		bad("max_request_bytes", "must be positive, got %d", c.MaxRequestBytes)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// ParseFaultRate parses "name:probability", the --sim.fault-rate syntax.
func ParseFaultRate(s string) (Fault, float64, error) {
	name, prob, ok := strings.Cut(s, ":")
	if !ok {
		return FaultNone, 0, fmt.Errorf("fault rate %q: want name:probability", s)
	}
	f, err := ParseFault(name)
	if err != nil {
		return FaultNone, 0, fmt.Errorf("fault rate %q: %w", s, err)
	}
	p, err := strconv.ParseFloat(prob, 64)
	if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
		return FaultNone, 0, fmt.Errorf("fault rate %q: probability must be a number in [0, 1]", s)
	}
	return f, p, nil
}
