package benchrun

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// Spec is one benchmark, as values: the CLI's flags after parsing, or a
// daemon request after validation. Start from DefaultSpec, whose values are
// bench_serving's defaults.
type Spec struct {
	Backend string
	// BaseURL is --base-url, or http://Host:Port.
	BaseURL string
	// Model is --model; empty means GET /v1/models. ServedModelName, if
	// set, is what the requests send as "model".
	Model, ServedModelName string
	// Tokenizer is a path or hub id; empty means GET /model_info, then
	// Model (newest sglang).
	Tokenizer string
	// Module, for a daemon bench window, is what the measured module's
	// probes send (prober.ModuleOptions): its sampling, include_usage and
	// extra body apply to the window's requests on every backend. Nil for
	// the CLI, whose requests follow bench_serving's flags.
	Module *prober.RequestOptions

	Dataset        string
	DatasetOptions datasets.Options
	NumPrompts     int

	// RequestRate is requests per second; +Inf sends everything at once.
	RequestRate float64
	// Burstiness is the gamma shape of arrival gaps (vLLM); 1 is Poisson.
	Burstiness float64
	// RampUp, if set, moves the rate from RampUpStartRPS to RampUpEndRPS.
	RampUp                       prober.RampStrategy
	RampUpStartRPS, RampUpEndRPS float64
	// UseTraceTimestamps schedules by the dataset's timestamps. bench_serving
	// only prints "trace" and ignores them; we really replay them.
	UseTraceTimestamps bool
	MaxConcurrency     int
	// MaxDuration is a hard cap on the measured run (0: none). At the cap,
	// dispatching stops and requests in flight are cancelled.
	MaxDuration time.Duration

	Seed           int64
	WarmupRequests int

	DisableStream, DisableIgnoreEOS bool
	Temperature, TopP               float64
	ExtraBody                       map[string]any
	Headers                         map[string]string

	// Logprob options of sglang's native /generate (--return-logprob etc.).
	ReturnLogprob       bool
	TopLogprobsNum      int
	TokenIDsLogprob     []int
	LogprobStartLen     int
	ReturnRoutedExperts bool

	LoRANames        []string
	LoRADistribution string
	LoRAZipfAlpha    float64

	FlushCache        bool
	FlushCacheTimeout time.Duration
	Profile           Profile

	// ReadyCheckTimeout polls the server until it answers; 0 skips.
	ReadyCheckTimeout time.Duration
	// RequestTimeout bounds each request, warmup included, body and all;
	// a request past it ends as timeout. 0 means no bound.
	RequestTimeout time.Duration

	Compat bench.Compat
	Tag    string

	// Goodput, PercentileMetrics and MetricPercentiles are vLLM's
	// --goodput, --percentile-metrics and --metric-percentiles.
	Goodput           bench.Goodput
	PercentileMetrics []string
	MetricPercentiles []float64
	// Details keeps the per-request arrays (--output-details).
	Details bool
	// Stats is bench.StatsExact or bench.StatsSketch (--stats).
	Stats string
	// DetailsNoTexts keeps the details' times without the generated texts
	// (details for a report or a plot, not for --output-details).
	DetailsNoTexts bool
	// SpoolDetails keeps the details on disk until the record is written
	// (bench.Params.SpoolDetails): --output-details without a report or a
	// plot, which need them in memory.
	SpoolDetails bool
}

// Profile is --profile and its options (bench_serving §3).
type Profile struct {
	Enabled        bool
	Activities     []string
	StartStep      int // -1: not sent
	Steps          int // -1: not sent (newest's --profile-steps)
	NumSteps       int // -1: not sent
	ByStage        bool
	Stages         []string
	OutputDir      string
	Prefix         string
	PrefillURLs    []string // --pd-separated: profile these instead of the base URL
	DecodeURLs     []string
	PDSeparated    bool
	StopAfterSteps bool // set when the server stops by itself
}

// DefaultSpec returns bench_serving's defaults (newest versions, §6).
// DefaultRequestTimeout is --request-timeout-sec's default: far past any
// sane generation (bench_serving's aiohttp session allows 6 h), but a
// bench against a server that stalls mid-stream still ends.
const DefaultRequestTimeout = 30 * time.Minute

func DefaultSpec() Spec {
	return Spec{
		Backend:           "sglang",
		Dataset:           "sharegpt",
		DatasetOptions:    datasets.DefaultOptions(),
		NumPrompts:        1000,
		RequestRate:       math.Inf(1),
		Burstiness:        1,
		Seed:              42,
		WarmupRequests:    1,
		Temperature:       0,
		TopP:              1,
		LogprobStartLen:   -1,
		LoRADistribution:  datasets.LoRAUniform,
		LoRAZipfAlpha:     1.5,
		FlushCacheTimeout: 60 * time.Second,
		Profile:           Profile{Activities: []string{"CPU", "GPU"}, StartStep: -1, Steps: -1, NumSteps: -1},
		ReadyCheckTimeout: 60 * time.Second,
		RequestTimeout:    DefaultRequestTimeout,
	}
}

// BaseURL is bench_serving's base URL rule: --base-url if given, else
// http://host:port with the backend's default port when port is 0.
func BaseURL(baseURL, host string, port int, backend string) (string, error) {
	if baseURL != "" {
		u, err := prober.NormalizeBaseURL(baseURL)
		if err != nil {
			return "", fmt.Errorf("--base-url %w", err)
		}
		return u, nil
	}
	if port == 0 {
		p, ok := prober.DefaultPort(backend)
		if !ok {
			return "", fmt.Errorf("--backend %q: unknown backend (one of %s)", backend, strings.Join(prober.BackendNames(), ", "))
		}
		port = p
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("--port %d: out of range", port)
	}
	return "http://" + hostPort(host, port), nil
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// Validate checks what can be checked without the network, returning every
// problem at once.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	info, err := prober.LookupBackend(s.Backend)
	if err != nil {
		bad("--backend: %w", err)
	}
	if s.BaseURL == "" {
		bad("no base URL")
	}
	if s.NumPrompts < 1 {
		bad("--num-prompts must be at least 1, got %d", s.NumPrompts)
	}
	if math.IsNaN(s.RequestRate) || s.RequestRate <= 0 {
		bad("--request-rate must be > 0 (inf sends all at once), got %v", s.RequestRate)
	}
	if math.IsNaN(s.Burstiness) || s.Burstiness <= 0 {
		bad("--burstiness must be > 0, got %v", s.Burstiness)
	}
	if s.MaxConcurrency < 0 {
		bad("--max-concurrency must be >= 1, got %d", s.MaxConcurrency)
	}
	if s.WarmupRequests < 0 {
		bad("--warmup-requests must be >= 0, got %d", s.WarmupRequests)
	}
	if s.RampUp != "" {
		if s.RampUp != prober.RampLinear && s.RampUp != prober.RampExponential {
			bad("--ramp-up-strategy must be linear or exponential, got %q", s.RampUp)
		}
		if !(s.RampUpStartRPS > 0) || !(s.RampUpEndRPS > 0) || math.IsInf(s.RampUpStartRPS, 0) || math.IsInf(s.RampUpEndRPS, 0) {
			bad("--ramp-up-strategy needs finite --ramp-up-start-rps and --ramp-up-end-rps > 0")
		}
		if !math.IsInf(s.RequestRate, 1) {
			bad("--ramp-up-strategy replaces --request-rate; do not set both")
		}
		if s.UseTraceTimestamps {
			bad("--ramp-up-strategy and --use-trace-timestamps exclude each other")
		}
	} else if s.RampUpStartRPS != 0 || s.RampUpEndRPS != 0 {
		bad("--ramp-up-start-rps and --ramp-up-end-rps need --ramp-up-strategy")
	}
	if s.TokenizePrompt() && s.Backend != "sglang" {
		bad("--tokenize-prompt works only with --backend sglang (it sends input_ids)")
	}
	if s.TokenizePrompt() && (s.Dataset != "random" && s.Dataset != "random-ids" && !strings.HasPrefix(s.Dataset, "random")) {
		bad("--tokenize-prompt works only with the random and random-ids datasets")
	}
	if s.Dataset == "image" || s.Dataset == "mmmu" {
		if s.TokenizePrompt() {
			bad("--dataset-name %s forbids --tokenize-prompt", s.Dataset)
		}
		// Images ride in every OpenAI chat body (image_url content items,
		// bench_serving's chat path), in sglang's /generate image_data,
		// and in sglang's completions extension; nowhere else.
		if info.Protocol != prober.ProtocolOpenAIChat && info.Protocol != prober.ProtocolSGLangGenerate && s.Backend != "sglang-oai" {
			var can []string
			for _, name := range prober.BackendNames() {
				if i, err := prober.LookupBackend(name); err == nil && (i.Protocol == prober.ProtocolOpenAIChat || i.Protocol == prober.ProtocolSGLangGenerate || name == "sglang-oai") {
					can = append(can, name)
				}
			}
			bad("--dataset-name %s needs a backend that carries images: %s", s.Dataset, strings.Join(can, ", "))
		}
	}
	if info.ModelRequired && s.Model == "" {
		bad("--backend %s requires --model", s.Backend)
	}
	if s.Profile.PDSeparated && len(s.Profile.PrefillURLs) > 0 && len(s.Profile.DecodeURLs) > 0 {
		bad("--profile-prefill-url and --profile-decode-url exclude each other")
	}
	if (len(s.Profile.PrefillURLs) > 0 || len(s.Profile.DecodeURLs) > 0) && !s.Profile.PDSeparated {
		bad("--profile-prefill-url and --profile-decode-url need --pd-separated")
	}
	if _, err := datasets.NewLoRAPicker(s.LoRANames, s.LoRADistribution, s.LoRAZipfAlpha); err != nil {
		bad("--lora-name: %w", err)
	}
	if s.MaxDuration < 0 {
		bad("max duration must be >= 0")
	}
	return errors.Join(errs...)
}

// Params are the bench package's parameters of this run.
func (s *Spec) Params() bench.Params {
	o := s.DatasetOptions
	return bench.Params{
		Backend:            s.Backend,
		DatasetName:        s.Dataset,
		RequestRate:        s.RequestRate,
		UseTraceTimestamps: s.UseTraceTimestamps,
		MaxConcurrency:     s.MaxConcurrency,
		SharegptOutputLen:  o.SharegptOutputLen,
		RandomInputLen:     o.RandomInputLen,
		RandomOutputLen:    o.RandomOutputLen,
		RandomRangeRatio:   o.RandomRangeRatio,
		Tag:                s.Tag,
		NumPrompts:         s.NumPrompts,
		ImageCount:         o.ImageCount,
		ImageResolution:    o.ImageResolution,
		Compat:             s.Compat,
		Goodput:            s.Goodput,
		PercentileMetrics:  s.PercentileMetrics,
		MetricPercentiles:  s.MetricPercentiles,
		Details:            s.Details,
		DetailsNoTexts:     s.DetailsNoTexts,
		SpoolDetails:       s.SpoolDetails,
		Stats:              s.Stats,
	}
}

// TokenizePrompt reports --tokenize-prompt.
func (s *Spec) TokenizePrompt() bool { return s.DatasetOptions.TokenizePrompt }

// RateLabel is the rate as bench_serving prints it: "trace" with
// --use-trace-timestamps, else a Python float ("inf", "50.0").
func (s *Spec) RateLabel() string {
	if s.UseTraceTimestamps {
		return "trace"
	}
	return prober.PyFloat(s.RequestRate)
}
