package runner

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// FakeBootstrapHost is sglang's placeholder bootstrap host: a decode
// server with the fake transfer backend takes a request that names it as
// already prefilled.
const FakeBootstrapHost = "2.2.2.2"

// Spec is one benchmark, and the only description of one: the bench CLI's
// flags bind into its fields, a bench window's JSON body decodes onto it
// (its JSON keys are the flag names with underscores), a configured
// target and module map onto it in ModuleSpec, and Validate checks it
// once for every caller. Start from DefaultSpec, whose values are
// bench_serving's defaults.
type Spec struct {
	// Params are the parameters a run's summary reads and its record
	// echoes: the backend, the dataset (--dataset-name) and its options
	// (datasets.Options: --random-input-len, ...), the prompt count, the
	// request rate (+Inf sends everything at once; JSON: a number or
	// "inf"), --use-trace-timestamps, --max-concurrency (0: unbounded),
	// --tag, --compat (JSON: "all" or a comma-separated list), vLLM's
	// --goodput, --percentile-metrics and --metric-percentiles, --stats,
	// --cache-report and --cost-per-hour. They are declared once, in
	// bench.Params, so the record echoes the very fields the run was
	// given; RunParams adds what the backend's traits decide.
	bench.Params
	// BaseURL is --base-url, or http://Host:Port.
	BaseURL string `json:"base_url"`
	// Model is --model; empty means GET /v1/models. ServedModelName, if
	// set, is what the requests send as "model".
	Model           string `json:"model"`
	ServedModelName string `json:"served_model_name"`
	// Tokenizer is a path or hub id; empty means GET /model_info, then
	// Model (newest sglang).
	Tokenizer string `json:"tokenizer"`
	// Module, for a daemon bench window, is what the measured module's
	// probes put in a request body (prober.ModuleOptions: sampling,
	// include_usage, extra body), applied on every backend. Nil for the
	// CLI, whose requests follow bench_serving's flags. Its streaming,
	// ignore_eos and headers are this Spec's (DisableStream,
	// DisableIgnoreEOS, Headers), set by ModuleSpec.
	Module *prober.RequestOptions `json:"-"`

	// ResponseFormat, Tools, ToolChoice and Checks are what each answer
	// is asked to be and judged by, as a module's keys of the same names
	// (docs/checks.md); the summary counts the verdicts ("Valid
	// responses"). A judged answer is sent without ignore_eos.
	ResponseFormat map[string]any      `json:"response_format"`
	Tools          []any               `json:"tools"`
	ToolChoice     any                 `json:"tool_choice"`
	Checks         config.AnswerChecks `json:"checks"`

	// Burstiness is the gamma shape of arrival gaps (vLLM); 1 is Poisson.
	Burstiness float64 `json:"burstiness"`
	// RampUp, if set, moves the rate from RampUpStartRPS to RampUpEndRPS.
	RampUp         prober.RampStrategy `json:"ramp_up_strategy"`
	RampUpStartRPS float64             `json:"ramp_up_start_rps"`
	RampUpEndRPS   float64             `json:"ramp_up_end_rps"`
	// MaxDuration is a hard cap on the measured run (0: none). At the cap,
	// dispatching stops and requests in flight are cancelled. JSON: a
	// duration string such as "5m".
	MaxDuration time.Duration `json:"max_duration"`

	Seed           int64 `json:"seed"`
	WarmupRequests int   `json:"warmup_requests"`

	DisableStream    bool    `json:"disable_stream"`
	DisableIgnoreEOS bool    `json:"disable_ignore_eos"`
	Temperature      float64 `json:"temperature"`
	TopP             float64 `json:"top_p"`
	// vLLM's other sampling flags, sent on the OpenAI backends only, as
	// vLLM's bench serve sends its sampling parameters; nil: not sent.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	// ChatTemplateKwargs is sent as chat_template_kwargs on chat backends.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	// RequestIDPrefix numbers the measured requests' x-request-id header
	// (prefix0, prefix1, ...), as vLLM does; empty: no header.
	RequestIDPrefix string `json:"request_id_prefix"`
	// Insecure skips verifying the server's TLS certificate (vLLM's
	// --insecure). The CLI's only: a daemon's targets carry their own
	// tls_config, and a bench window's caller must not loosen it.
	Insecure bool `json:"-"`
	// ExtraBody is merged into every request body, last.
	ExtraBody map[string]any    `json:"extra_request_body"`
	Headers   map[string]string `json:"header"`

	// Logprob options of sglang's native /generate (--return-logprob etc.).
	ReturnLogprob       bool  `json:"return_logprob"`
	TopLogprobsNum      int   `json:"top_logprobs_num"`
	TokenIDsLogprob     []int `json:"token_ids_logprob"`
	LogprobStartLen     int   `json:"logprob_start_len"`
	ReturnRoutedExperts bool  `json:"return_routed_experts"`
	// FakePrefill adds sglang's fake bootstrap fields (bootstrap_host,
	// bootstrap_room) to every request of an sglang backend, for
	// decode-only benchmarking of a disaggregated server.
	FakePrefill bool `json:"fake_prefill"`

	LoRANames        []string `json:"lora_name"`
	LoRADistribution string   `json:"lora_request_distribution"`
	LoRAZipfAlpha    float64  `json:"lora_zipf_alpha"`

	// ServerMetrics are the server's Prometheus endpoints, read at the
	// start and end of the measured run and sampled through it; empty
	// means the base URL's /metrics, when it answers. NoServerMetrics
	// reads none.
	ServerMetrics   []string `json:"server_metrics"`
	NoServerMetrics bool     `json:"no_server_metrics"`
	// NoTraceparent sends no W3C traceparent header of our own on the
	// requests (one is sent by default, its trace id in the details).
	NoTraceparent bool `json:"no_traceparent"`

	FlushCache        bool          `json:"flush_cache"`
	FlushCacheTimeout time.Duration `json:"flush_cache_timeout"`
	Profile           Profile       `json:"profile"`

	// ReadyCheckTimeout polls the server until it answers; 0 skips.
	ReadyCheckTimeout time.Duration `json:"ready_check_timeout_sec"`
	// RequestTimeout bounds each request, warmup included, body and all;
	// a request past it ends as timeout. 0 means no bound.
	RequestTimeout time.Duration `json:"request_timeout_sec"`

	// Sweep makes the bench a sweep or an SLO search; nil: one run.
	Sweep *SweepSpec `json:"sweep"`
	// Runs is how many times the bench runs, each run a record of its
	// own, so that a comparison weighs a change against the drift between
	// runs of the same server (docs/compare.md): one run cannot separate
	// the two. RunsPause bounds the wait between two runs for the server
	// to be idle again (RunSet); JSON: seconds, as --runs-pause-sec.
	Runs      int           `json:"runs"`
	RunsPause time.Duration `json:"runs_pause_sec"`

	// Shard makes this process one part of a run split across processes
	// (see Shard); nil: the whole run. JSON: "I/N". It hides
	// Params.Shard, which the run fills from it for the record.
	Shard *Shard `json:"shard,omitempty"`
	// RunID names the run the shards belong to; empty: DeriveRunID.
	RunID string `json:"run_id,omitempty"`
	// StartAt, if set, is when the measured run starts: an RFC 3339 time,
	// or a file holding one (see StartTime), read when the run is about
	// to start.
	StartAt string `json:"start_at,omitempty"`
}

// Profile is --profile and its options, as bench_serving sends them to
// /start_profile.
type Profile struct {
	Enabled     bool     `json:"enabled"`
	Activities  []string `json:"activities"`
	StartStep   int      `json:"start_step"` // -1: not sent
	Steps       int      `json:"steps"`      // -1: not sent (newest's --profile-steps)
	NumSteps    int      `json:"num_steps"`  // -1: not sent
	ByStage     bool     `json:"by_stage"`
	Stages      []string `json:"stages"`
	OutputDir   string   `json:"output_dir"`
	Prefix      string   `json:"prefix"`
	PrefillURLs []string `json:"prefill_url"` // --pd-separated: profile these instead of the base URL
	DecodeURLs  []string `json:"decode_url"`
	PDSeparated bool     `json:"pd_separated"`
	// StopAfterSteps is set when the server stops by itself.
	StopAfterSteps bool `json:"-"`
}

// DefaultRequestTimeout is --request-timeout-sec's default: far past any
// sane generation (bench_serving's aiohttp session allows 6 h), but a
// bench against a server that stalls mid-stream still ends.
const DefaultRequestTimeout = 30 * time.Minute

// DefaultSpec returns bench_serving's defaults (its newest version).
func DefaultSpec() Spec {
	return Spec{
		Params: bench.Params{
			Backend:     "sglang",
			Dataset:     "sharegpt",
			Options:     datasets.DefaultOptions(),
			NumPrompts:  1000,
			RequestRate: math.Inf(1),
		},
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
		Runs:              1,
		RunsPause:         DefaultRunsPause,
	}
}

// BaseURL is bench_serving's base URL rule: --base-url if given, else
// http://host:port with the backend's default port when port is 0.
func BaseURL(baseURL, host string, port int, backend string) (string, error) {
	if baseURL != "" {
		// A backend's own API root (ollama's /api) is taken as the
		// server's root, as /v1 is.
		normalize := prober.NormalizeBaseURL
		if info, err := prober.LookupBackend(backend); err == nil {
			normalize = info.BaseURL
		}
		u, err := normalize(baseURL)
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

// Validate checks what can be checked without the network, for the CLI
// and the bench window API alike, returning every problem at once as
// Problems (each names its field; the caller spells it as its user wrote
// it). The daemon's limits are the API's to check, on top of these.
func (s *Spec) Validate() error {
	var p problems
	info, err := prober.LookupBackend(s.Backend)
	if err != nil {
		p.add("backend", "%v", err)
	} else if _, err := prober.ModuleChecker(info, s.answerModule()); err != nil {
		p.add("", "%v", err)
	}
	if s.BaseURL == "" {
		p.add("", "no base URL")
	}
	atLeast := func(field string, v, lo int) {
		if v < lo {
			p.add(field, "must be at least %d, got %d", lo, v)
		}
	}
	unit := func(field string, v float64) {
		if !(v >= 0 && v <= 1) {
			p.add(field, "must be between 0 and 1, got %v", v)
		}
	}
	positive := func(field string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			p.add(field, "must be above 0, got %v", v)
		}
	}
	if !(s.CostPerHour >= 0) || math.IsInf(s.CostPerHour, 0) {
		p.add("cost_per_hour", "must be a finite number of USD at least 0, got %v", s.CostPerHour)
	}
	atLeast("num_prompts", s.NumPrompts, 1)
	if math.IsNaN(s.RequestRate) || s.RequestRate <= 0 {
		p.add("request_rate", "must be > 0 (inf sends all at once), got %v", s.RequestRate)
	}
	positive("burstiness", s.Burstiness)
	atLeast("max_concurrency", s.MaxConcurrency, 0)
	atLeast("warmup_requests", s.WarmupRequests, 0)
	if s.MaxDuration < 0 {
		p.add("max_duration", "must be at least 0, got %s", s.MaxDuration)
	}
	if s.RequestTimeout < 0 {
		p.add("request_timeout_sec", "must be at least 0 (0: no timeout)")
	}
	if s.ReadyCheckTimeout < 0 {
		p.add("ready_check_timeout_sec", "must be at least 0 (0 skips the check)")
	}
	if s.FlushCacheTimeout < 0 {
		p.add("flush_cache_timeout", "must be at least 0")
	}
	atLeast("runs", s.Runs, 1)
	if s.RunsPause < 0 {
		p.add("runs_pause_sec", "must be at least 0, got %s", s.RunsPause)
	}
	if s.Sweep != nil && s.Runs > 1 {
		p.add("runs", "repeats one run; a sweep's points are separate runs already")
	}

	// The dataset's lengths: values argparse would take but that make no
	// run (a zero or negative length sends empty prompts).
	o := &s.Options
	atLeast("random_input_len", o.RandomInputLen, 1)
	atLeast("random_output_len", o.RandomOutputLen, 1)
	unit("random_range_ratio", o.RandomRangeRatio)
	atLeast("image_count", o.ImageCount, 1)
	atLeast("sharegpt_output_len", o.SharegptOutputLen, 0)
	atLeast("sharegpt_context_len", o.SharegptContextLen, 0)
	atLeast("top_logprobs_num", s.TopLogprobsNum, 0)
	atLeast("gsp_num_groups", o.GSPNumGroups, 1)
	atLeast("gsp_prompts_per_group", o.GSPPromptsPerGroup, 1)
	atLeast("gsp_system_prompt_len", o.GSPSystemPromptLen, 0)
	atLeast("gsp_question_len", o.GSPQuestionLen, 1)
	atLeast("gsp_output_len", o.GSPOutputLen, 1)
	atLeast("gsp_num_turns", o.GSPNumTurns, 1)
	unit("gsp_range_ratio", o.GSPRangeRatio)
	atLeast("mooncake_num_rounds", o.MooncakeNumRounds, 1)
	positive("mooncake_slowdown_factor", o.MooncakeSlowdownFactor)
	if s.NumPrompts >= 1 {
		if err := datasets.CheckCount(s.Dataset, s.NumPrompts, *o); err != nil {
			p.add("", "%v", err)
		}
	}

	if s.RampUp != "" {
		if s.RampUp != prober.RampLinear && s.RampUp != prober.RampExponential {
			p.add("ramp_up_strategy", "must be linear or exponential, got %q", s.RampUp)
		}
		positive("ramp_up_start_rps", s.RampUpStartRPS)
		positive("ramp_up_end_rps", s.RampUpEndRPS)
		if !math.IsInf(s.RequestRate, 1) {
			p.add("ramp_up_strategy", "replaces the request rate; do not set both")
		}
		if s.replaysTimestamps() {
			p.add("ramp_up_strategy", "excludes replaying trace timestamps (or a dynamic plan)")
		}
	} else if s.RampUpStartRPS != 0 || s.RampUpEndRPS != 0 {
		p.add("ramp_up_start_rps", "the ramp's rates need a ramp-up strategy")
	}
	if s.TokenizePrompt() && !info.InputIDs {
		p.add("tokenize_prompt", "works only with a backend that sends input_ids: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.InputIDs }), ", "))
	}
	if s.TokenizePrompt() && !strings.HasPrefix(s.Dataset, "random") {
		p.add("tokenize_prompt", "works only with the random and random-ids datasets")
	}
	if s.Dataset == "image" || s.Dataset == "mmmu" {
		if s.TokenizePrompt() {
			p.add("tokenize_prompt", "cannot be used with the %s dataset", s.Dataset)
		}
		if err == nil && !info.Images {
			p.add("dataset_name", "%s needs a backend that carries images: %s", s.Dataset, strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.Images }), ", "))
		}
	}
	if err == nil && !info.VLLMSampling {
		for _, f := range s.vllmSampling() {
			p.add(f.key, "is sent only by the OpenAI backends, as vLLM sends it: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.VLLMSampling }), ", "))
		}
	}
	if err == nil && s.ChatTemplateKwargs != nil && !info.ChatTemplateKwargs {
		p.add("chat_template_kwargs", "needs a chat backend: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.ChatTemplateKwargs }), ", "))
	}
	if s.Dataset == "audio" {
		// Its clips travel as input_audio parts of a chat message: no
		// other protocol has a place for them (sglang allows only
		// sglang-oai-chat), and a completions request would drop them.
		if err == nil && !info.Audio {
			p.add("dataset_name", "audio sends its clips as input_audio parts of a chat message: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.Audio }), ", "))
		}
		if s.TokenizePrompt() {
			p.add("tokenize_prompt", "cannot be used with the audio dataset")
		}
		if s.Compat.NoUsage {
			// Its prompt length is the server's usage and nothing else: a
			// run that does not ask for usage would count only the text.
			p.add("compat", "no-usage cannot be used with the audio dataset, whose prompt length is the server's usage")
		}
	}
	if s.Dataset == "token-trace" && err == nil && !info.InputIDs {
		// The trace holds token ids, not text: only input_ids carries them.
		p.add("dataset_name", "token-trace sends its token ids as input_ids: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.InputIDs }), ", "))
	}
	if s.Dataset == "embedding" && err == nil && !info.Embedding {
		p.add("dataset_name", "embedding needs an embedding backend: %s", strings.Join(backendsWith(func(i prober.BackendInfo) bool { return i.Embedding }), ", "))
	}
	if info.ModelRequired && s.Model == "" {
		p.add("model", "backend %s requires a model", s.Backend)
	}
	if s.Profile.PDSeparated && len(s.Profile.PrefillURLs) > 0 && len(s.Profile.DecodeURLs) > 0 {
		p.add("profile.prefill_url", "excludes the decode URLs: profile one side")
	}
	if (len(s.Profile.PrefillURLs) > 0 || len(s.Profile.DecodeURLs) > 0) && !s.Profile.PDSeparated {
		p.add("profile.pd_separated", "must be set with a prefill or decode URL to profile")
	}
	if _, err := datasets.NewLoRAPicker(s.LoRANames, s.LoRADistribution, s.LoRAZipfAlpha); err != nil {
		p.add("lora_name", "%v", err)
	}
	for _, u := range s.ServerMetrics {
		if v, err := url.Parse(u); err != nil || (v.Scheme != "http" && v.Scheme != "https") || v.Host == "" {
			p.add("server_metrics", "want an http or https URL, got %q", prober.TruncateUTF8(u, 80))
		}
	}
	if s.Stats != "" && s.Stats != bench.StatsExact && s.Stats != bench.StatsSketch {
		p.add("stats", "must be %s or %s, got %q", bench.StatsExact, bench.StatsSketch, prober.TruncateUTF8(s.Stats, 40))
	}
	if s.Sweep != nil {
		s.Sweep.validate(s, &p)
		if slices.ContainsFunc(s.Sweep.SLO, func(o bench.Objective) bool { return o.Metric == bench.MetricValid }) && !s.Checks.Any() {
			// Without checks no answer is judged and every point would
			// fail the objective: an error now, not a capacity of 0.
			p.add("sweep.slo", "valid>=P%% needs answer checks to judge the answers (docs/checks.md)")
		}
	}
	s.validateShard(&p)
	return p.err()
}

// backendsWith lists the backends that have a trait, for messages.
// samplingField is one body key of vLLM's sampling flags.
type samplingField struct {
	key   string
	value any
}

// vllmSampling lists the sampling flags given that only vLLM has, in the
// order vLLM's bench serve puts them in its extra body.
func (s *Spec) vllmSampling() []samplingField {
	var out []samplingField
	if s.TopK != nil {
		out = append(out, samplingField{"top_k", *s.TopK})
	}
	if s.MinP != nil {
		out = append(out, samplingField{"min_p", *s.MinP})
	}
	if s.FrequencyPenalty != nil {
		out = append(out, samplingField{"frequency_penalty", *s.FrequencyPenalty})
	}
	if s.PresencePenalty != nil {
		out = append(out, samplingField{"presence_penalty", *s.PresencePenalty})
	}
	if s.RepetitionPenalty != nil {
		out = append(out, samplingField{"repetition_penalty", *s.RepetitionPenalty})
	}
	return out
}

// backendsWith lists the backends that have a trait, for messages.
func backendsWith(has func(prober.BackendInfo) bool) []string {
	var out []string
	for _, name := range prober.BackendNames() {
		if i, err := prober.LookupBackend(name); err == nil && has(i) {
			out = append(out, name)
		}
	}
	return out
}

// RunParams are the bench package's parameters of this run: the Spec's
// own, with the traits of its backend that the summary reads.
func (s *Spec) RunParams() bench.Params {
	p := s.Params
	info, _ := prober.LookupBackend(s.Backend)
	p.SplitChunkGaps, p.Embedding = info.SplitChunkGaps, info.Embedding
	return p
}

// TokenizePrompt reports --tokenize-prompt.
func (s *Spec) TokenizePrompt() bool { return s.Options.TokenizePrompt }

// replaysTimestamps is whether the run sends its prompts at their
// Timestamps: --use-trace-timestamps, and the datasets whose every prompt
// carries its time (mooncake, and dynamic, whose plan is a schedule).
func (s *Spec) replaysTimestamps() bool {
	return s.UseTraceTimestamps || s.Dataset == "mooncake" || s.Dataset == "dynamic"
}

// RateLabel is the rate as bench_serving prints it: "trace" with
// --use-trace-timestamps, else a Python float ("inf", "50.0").
func (s *Spec) RateLabel() string {
	if s.UseTraceTimestamps {
		return "trace"
	}
	return pyfmt.Float(s.RequestRate)
}
