package simulator

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// AddFlags binds the --sim.* flags to a Config that starts as DefaultConfig.
// The Config is filled in when the command line is parsed; New validates it.
func AddFlags(cmd *kingpin.CmdClause) *Config {
	d := DefaultConfig()
	c := &Config{FaultRates: map[Fault]float64{}}
	cmd.Flag("sim.model", "Served model name.").Default(d.Model).StringVar(&c.Model)
	cmd.Flag("sim.max-model-len", "Maximum prompt plus output tokens per request, as vLLM's --max-model-len.").Default(strconv.Itoa(d.MaxModelLen)).IntVar(&c.MaxModelLen)
	cmd.Flag("sim.ttft", "Base time from admission to the first token.").Default(d.TTFT.String()).DurationVar(&c.TTFT)
	cmd.Flag("sim.ttft-jitter", "Jitter added to the time to first token.").Default(d.TTFTJitter.String()).DurationVar(&c.TTFTJitter)
	cmd.Flag("sim.prefill-per-token", "Time added to the time to first token per prompt token.").Default(d.PrefillPerToken.String()).DurationVar(&c.PrefillPerToken)
	cmd.Flag("sim.itl", "Time of one decode step, the gap between chunks (0 never sleeps).").Default(d.ITL.String()).DurationVar(&c.ITL)
	cmd.Flag("sim.itl-jitter", "Jitter added to each decode step.").Default(d.ITLJitter.String()).DurationVar(&c.ITLJitter)
	cmd.Flag("sim.itl-per-running-request", "Time added to each decode step per other running request.").Default(d.ITLPerRunningRequest.String()).DurationVar(&c.ITLPerRunningRequest)
	cmd.Flag("sim.jitter-distribution", "Jitter distribution: uniform (±jitter) or normal (jitter is the standard deviation).").Default(string(d.Jitter)).EnumVar((*string)(&c.Jitter), string(Uniform), string(Normal))
	cmd.Flag("sim.tokens-per-chunk", "Tokens per decode step and chunk; more than 1 mimics speculative decoding.").Default(strconv.Itoa(d.TokensPerChunk)).IntVar(&c.TokensPerChunk)
	cmd.Flag("sim.max-running-requests", "Requests generating at once; the rest wait in FIFO order (0: no cap).").Default(strconv.Itoa(d.MaxRunningRequests)).IntVar(&c.MaxRunningRequests)
	cmd.Flag("sim.mean-output-tokens", "Mean output length when neither ignore_eos nor a minimum length forces the maximum.").Default(strconv.Itoa(d.MeanOutputTokens)).IntVar(&c.MeanOutputTokens)
	cmd.Flag("sim.coalesce", "Buffer stream events and write only when the buffer fills or the stream ends.").Default(strconv.FormatBool(d.Coalesce)).BoolVar(&c.Coalesce)
	cmd.Flag("sim.coalesce-bytes", "Coalescing buffer size in bytes.").Default(strconv.Itoa(d.CoalesceBytes)).IntVar(&c.CoalesceBytes)
	cmd.Flag("sim.seed", "Seed for token text, jitter, EOS points, fault draws and generated ids.").Default(strconv.FormatUint(d.Seed, 10)).Uint64Var(&c.Seed)
	cmd.Flag("sim.fault-rate", "Inject a fault at a rate, as FAULT:PROBABILITY (e.g. 500:0.01, a 500 answer to 1% of requests); repeatable; none by default. Faults: "+faultNames()+".").PlaceHolder("FAULT:PROBABILITY").SetValue(faultRates(c.FaultRates))
	cmd.Flag("sim.admin", "Serve GET and PUT /admin/live, which change latency factors and a failure ratio while the simulator runs. Anyone who reaches it can degrade the server.").Default("false").BoolVar(&c.Admin)
	cmd.Flag("sim.header-faults", "Honour the "+FaultHeader+" request header.").Default(strconv.FormatBool(d.HeaderFaults)).BoolVar(&c.HeaderFaults)
	cmd.Flag("sim.fault-stall", "How long stall faults hold before carrying on (0: until the client leaves).").Default(d.FaultStall.String()).DurationVar(&c.FaultStall)
	cmd.Flag("sim.retry-after", "Retry-After of the 429 fault.").Default(d.RetryAfter.String()).DurationVar(&c.RetryAfter)
	cmd.Flag("sim.truth-size", "Finished requests whose ground truth is kept (0: record none).").Default(strconv.Itoa(d.TruthSize)).IntVar(&c.TruthSize)
	cmd.Flag("sim.state-metrics", "State each request's TTFT and queue time in vLLM's per-request metrics object on the OpenAI routes' usage chunk.").Default(strconv.FormatBool(d.StateMetrics)).BoolVar(&c.StateMetrics)
	cmd.Flag("sim.check-history", "Refuse a chat request whose assistant turns are not replies this server generated.").Default(strconv.FormatBool(d.CheckHistory)).BoolVar(&c.CheckHistory)
	cmd.Flag("sim.metrics-names", "Engine whose metric names GET /metrics serves: vllm or sglang.").Default(string(d.MetricsNames)).EnumVar((*string)(&c.MetricsNames), string(MetricsVLLM), string(MetricsSGLang))
	cmd.Flag("sim.kv-cache-tokens", "KV cache size in tokens: the KV-cache usage gauge's denominator and the prefix cache's capacity.").Default(strconv.Itoa(d.KVCacheTokens)).IntVar(&c.KVCacheTokens)
	cmd.Flag("sim.max-request-bytes", "Maximum request body size.").Default(strconv.FormatInt(d.MaxRequestBytes, 10)).Int64Var(&c.MaxRequestBytes)
	return c
}

func faultNames() string {
	names := make([]string, len(Faults))
	for i, f := range Faults {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// faultRates is the repeatable --sim.fault-rate value.
type faultRates map[Fault]float64

func (f faultRates) Set(s string) error {
	fault, p, err := ParseFaultRate(s)
	if err != nil {
		return err
	}
	f[fault] = p
	return nil
}

func (f faultRates) String() string {
	parts := make([]string, 0, len(f))
	for _, k := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, string(k)+":"+strconv.FormatFloat(f[k], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// IsCumulative makes the flag repeatable.
func (f faultRates) IsCumulative() bool { return true }
