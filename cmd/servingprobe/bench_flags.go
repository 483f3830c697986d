package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/envflag"
	"github.com/servingprobe/servingprobe/prober"
)

// benchFlags holds bench_serving's flags (spec §6) with their names and
// defaults, vLLM's additions, and ours.
type benchFlags struct {
	backend, baseURL, host string
	port                   int
	readyCheckTimeoutSec   float64
	requestTimeoutSec      float64

	datasetName, datasetPath string
	datasetOffset            int
	agenticMaxTurns          int
	speedBenchCategory       string
	speedBenchOutputLen      int

	model, servedModelName, tokenizer string
	numPrompts                        int

	sharegptOutputLen, sharegptContextLen int
	randomInputLen, randomOutputLen       int
	randomRangeRatio                      float64

	imageCount                                 int
	imageResolution, imageFormat, imageContent string
	randomImageCount                           bool

	requestRate        float64
	useTraceTimestamps bool
	maxConcurrency     int
	outputFile         string
	outputDetails      bool
	stats              string
	printRequests      bool
	disableTqdm        bool
	disableStream      bool

	returnLogprob       bool
	topLogprobsNum      int
	tokenIDsLogprob     []string
	logprobStartLen     int
	returnRoutedExperts bool
	cacheReport         bool

	seed                    int64
	disableIgnoreEOS        bool
	temperature, topP       float64
	extraRequestBody        string
	applyChatTemplate       bool
	profile, plotThroughput bool
	report                  string
	profileActivities       []string
	profileStartStep        int
	profileSteps            int
	profileNumSteps         int
	profileByStage          bool
	profileStages           []string
	profileOutputDir        string
	profilePrefix           string

	loraNames        []string
	loraDistribution string
	loraZipfAlpha    float64
	promptSuffix     string

	pdSeparated                         bool
	profilePrefillURL, profileDecodeURL []string
	flushCache                          bool
	flushCacheTimeout                   float64
	warmupRequests                      int
	tokenizePrompt                      bool

	gspNumGroups, gspPromptsPerGroup, gspSystemPromptLen int
	gspQuestionLen, gspOutputLen, gspNumTurns            int
	gspRangeRatio, gspZipfAlpha                          float64
	gspFastPrepare, gspSendRoutingKey, gspOrdered        bool
	gspGroupDistribution                                 string

	mooncakeSlowdownFactor float64
	mooncakeNumRounds      int
	mooncakeWorkload       string

	fakePrefill bool
	tag         string
	headers     []string

	// vLLM's.
	goodput           []string
	burstiness        float64
	percentileMetrics string
	metricPercentiles string
	rampUpStrategy    string
	rampUpStartRPS    float64
	rampUpEndRPS      float64

	// Ours.
	compat      []string
	strictJSON  bool
	maxDuration time.Duration

	remote remoteFlags
	sweep  sweepFlags

	// set records which flags the user gave, for flags that are only
	// refused when used.
	set map[string]*bool
}

// listTracker gives argparse's nargs='+' to kingpin: a list flag may be
// followed by more values (--lora-name a b c). bench has no positional
// arguments, so every positional token belongs to the list flag before it.
//
// Subtleness ahead: kingpin sets values in command-line order, which is
// what makes this work; a positional after a non-list flag that follows a
// list flag (--lora-name a --seed 1 b) also lands in the list, where
// argparse would refuse it.
type listTracker struct{ last *listValue }

type listValue struct {
	dst  *[]string
	tr   *listTracker
	name string
	set  bool
}

func (v *listValue) Set(s string) error {
	if !v.set { // the first user value replaces the default
		*v.dst, v.set = nil, true
	}
	*v.dst = append(*v.dst, s)
	v.tr.last = v
	return nil
}
func (v *listValue) String() string     { return strings.Join(*v.dst, " ") }
func (v *listValue) IsCumulative() bool { return true }

// tailValue takes positional tokens for the last list flag.
type tailValue struct{ tr *listTracker }

func (v *tailValue) Set(s string) error {
	if v.tr.last == nil {
		return fmt.Errorf("unexpected argument %q (bench takes no positional arguments)", s)
	}
	*v.tr.last.dst = append(*v.tr.last.dst, s)
	return nil
}
func (v *tailValue) String() string     { return "" }
func (v *tailValue) IsCumulative() bool { return true }

func addBenchFlags(cmd *kingpin.CmdClause) *benchFlags {
	f := &benchFlags{set: map[string]*bool{}}
	tr := &listTracker{}
	list := func(name, help string, dst *[]string, def ...string) {
		*dst = def
		cmd.Flag(name, help).SetValue(&listValue{dst: dst, tr: tr, name: name})
	}
	track := func(fc *kingpin.FlagClause) *kingpin.FlagClause {
		b := new(bool)
		f.set[fc.Model().Name] = b
		return fc.IsSetByUser(b)
	}

	cmd.Flag("backend", "Backend: "+strings.Join(prober.BackendNames(), ", ")+".").Default("sglang").StringVar(&f.backend)
	cmd.Flag("base-url", "Server base URL; overrides --host and --port.").StringVar(&f.baseURL)
	cmd.Flag("host", "Server host.").Default("0.0.0.0").StringVar(&f.host)
	cmd.Flag("port", "Server port (default: the backend's, as bench_serving).").IntVar(&f.port)
	cmd.Flag("request-timeout-sec", "Each request's timeout, warmup included, body and all; a request past it is a timeout failure. 0: none.").Default(strconv.Itoa(int(benchrun.DefaultRequestTimeout.Seconds()))).Float64Var(&f.requestTimeoutSec)
	cmd.Flag("ready-check-timeout-sec", "Wait this long for GET /v1/models to answer 200; 0 skips the check.").Default("60").Float64Var(&f.readyCheckTimeoutSec)

	cmd.Flag("dataset-name", "Dataset: random, random-ids, sharegpt, generated-shared-prefix, image, mooncake, custom, openai, mmmu.").Default("sharegpt").StringVar(&f.datasetName)
	cmd.Flag("dataset-path", "Dataset file (sharegpt: downloaded from the hub when empty; random: the embedded corpus when empty).").StringVar(&f.datasetPath)
	track(cmd.Flag("dataset-offset", "agentic-trace only (not supported).").Default("0")).IntVar(&f.datasetOffset)
	track(cmd.Flag("agentic-max-turns", "agentic-trace only (not supported).")).IntVar(&f.agenticMaxTurns)
	track(cmd.Flag("speed-bench-category", "speed-bench only (not supported).")).StringVar(&f.speedBenchCategory)
	track(cmd.Flag("speed-bench-output-len", "speed-bench only (not supported).").Default("512")).IntVar(&f.speedBenchOutputLen)

	cmd.Flag("model", "Model name (default: the first of GET /v1/models).").StringVar(&f.model)
	cmd.Flag("served-model-name", "The model name sent in requests, if it differs from --model.").StringVar(&f.servedModelName)
	cmd.Flag("tokenizer", "Tokenizer: a tokenizer.json, its directory, or a hub id[@revision] (default: GET /model_info, then --model).").StringVar(&f.tokenizer)
	cmd.Flag("num-prompts", "Number of prompts.").Default("1000").IntVar(&f.numPrompts)

	cmd.Flag("sharegpt-output-len", "Output length of every ShareGPT request (default: the completion's length).").IntVar(&f.sharegptOutputLen)
	cmd.Flag("sharegpt-context-len", "Drop ShareGPT entries whose prompt plus output exceed this.").IntVar(&f.sharegptContextLen)
	cmd.Flag("random-input-len", "Input tokens of the random datasets.").Default("1024").IntVar(&f.randomInputLen)
	cmd.Flag("random-output-len", "Output tokens of the random datasets.").Default("1024").IntVar(&f.randomOutputLen)
	cmd.Flag("random-range-ratio", "Lengths are uniform on [max(1, L*r), L].").Default("0.0").Float64Var(&f.randomRangeRatio)

	cmd.Flag("image-count", "Images per request.").Default("1").IntVar(&f.imageCount)
	cmd.Flag("image-resolution", "4k, 1080p, 720p, 360p, HxW or random:<minH>x<minW>-<maxH>x<maxW>.").Default("1080p").StringVar(&f.imageResolution)
	cmd.Flag("random-image-count", "Draw the image count uniformly from 1..--image-count.").BoolVar(&f.randomImageCount)
	cmd.Flag("image-format", "jpeg or png.").Default("jpeg").EnumVar(&f.imageFormat, "jpeg", "png")
	cmd.Flag("image-content", "random or blank.").Default("random").EnumVar(&f.imageContent, "random", "blank")

	cmd.Flag("request-rate", "Requests per second; inf sends all at once. Poisson (or --burstiness gamma) arrivals on an absolute schedule.").Default("inf").Float64Var(&f.requestRate)
	cmd.Flag("use-trace-timestamps", "Schedule by the dataset's trace timestamps (bench_serving only prints 'trace'; servingprobe replays them).").BoolVar(&f.useTraceTimestamps)
	track(cmd.Flag("max-concurrency", "Requests in flight at most; arrivals queue on the client and the wait is reported.")).IntVar(&f.maxConcurrency)
	cmd.Flag("output-file", "JSONL file the result is appended to (default: bench_serving's name).").StringVar(&f.outputFile)
	cmd.Flag("output-details", "Add per-request arrays to the JSONL record.").BoolVar(&f.outputDetails)
	cmd.Flag("stats", "exact keeps every sample (4 bytes an inter-token gap) for NumPy's percentiles; sketch keeps every latency in quantile sketches (1% relative error; means, maxima and counts exact; peaks on a 10 ms grid; labelled in the table and JSONL), so that memory does not grow with the requests of a long run.").Default(bench.StatsExact).EnumVar(&f.stats, bench.StatsExact, bench.StatsSketch)
	track(cmd.Flag("print-requests", "Not supported.")).BoolVar(&f.printRequests)
	cmd.Flag("disable-tqdm", "No progress bar.").BoolVar(&f.disableTqdm)
	cmd.Flag("disable-stream", "Non-streaming requests.").BoolVar(&f.disableStream)

	cmd.Flag("return-logprob", "Ask for logprobs (sglang /generate; completions with --top-logprobs-num).").BoolVar(&f.returnLogprob)
	cmd.Flag("top-logprobs-num", "Top logprobs per token.").Default("0").IntVar(&f.topLogprobsNum)
	list("token-ids-logprob", "Token ids whose logprobs to return (sglang /generate).", &f.tokenIDsLogprob)
	cmd.Flag("logprob-start-len", "sglang /generate logprob_start_len.").Default("-1").IntVar(&f.logprobStartLen)
	cmd.Flag("return-routed-experts", "sglang /generate return_routed_experts.").BoolVar(&f.returnRoutedExperts)
	track(cmd.Flag("cache-report", "Not supported.")).BoolVar(&f.cacheReport)

	cmd.Flag("seed", "Seed of prompt sampling, LoRA picks and arrivals.").Default("42").Int64Var(&f.seed)
	cmd.Flag("disable-ignore-eos", "Do not send ignore_eos (it is sent as true by default).").BoolVar(&f.disableIgnoreEOS)
	cmd.Flag("temperature", "Sampling temperature (sglang /generate only).").Default("0.0").Float64Var(&f.temperature)
	cmd.Flag("top-p", "Top-p (sglang /generate only, sent when < 1).").Default("1.0").Float64Var(&f.topP)
	cmd.Flag("extra-request-body", "A JSON object merged into every request body, last.").StringVar(&f.extraRequestBody)
	cmd.Flag("apply-chat-template", "Render prompts with the tokenizer's chat template.").BoolVar(&f.applyChatTemplate)

	cmd.Flag("profile", "POST /start_profile before and /stop_profile after the run.").BoolVar(&f.profile)
	cmd.Flag("plot-throughput", "After the table, plot output tokens/s and requests in flight over the run, in text (80 columns).").BoolVar(&f.plotThroughput)
	cmd.Flag("report", "Write a self-contained HTML report of the run (or of every sweep point) to this file.").PlaceHolder("FILE.html").StringVar(&f.report)
	list("profile-activities", "Profiler activities (CPU GPU CUDA_PROFILER XPU MEM).", &f.profileActivities, "CPU", "GPU")
	cmd.Flag("profile-start-step", "Profiler start step.").Default("-1").IntVar(&f.profileStartStep)
	cmd.Flag("profile-steps", "Profiler steps (the server stops by itself).").Default("-1").IntVar(&f.profileSteps)
	cmd.Flag("profile-num-steps", "Profiler steps (the server stops by itself).").Default("-1").IntVar(&f.profileNumSteps)
	cmd.Flag("profile-by-stage", "Profile by stage.").BoolVar(&f.profileByStage)
	list("profile-stages", "Profiler stages.", &f.profileStages)
	cmd.Flag("profile-output-dir", "Profiler output directory.").StringVar(&f.profileOutputDir)
	cmd.Flag("profile-prefix", "Profiler file prefix.").StringVar(&f.profilePrefix)

	list("lora-name", "LoRA adapter names (several after one flag, or the flag repeated).", &f.loraNames)
	cmd.Flag("lora-request-distribution", "uniform, distinct or skewed.").Default("uniform").EnumVar(&f.loraDistribution, "uniform", "distinct", "skewed")
	cmd.Flag("lora-zipf-alpha", "Skew of the skewed distribution (> 1).").Default("1.5").Float64Var(&f.loraZipfAlpha)
	cmd.Flag("prompt-suffix", "Suffix added to ShareGPT prompts.").StringVar(&f.promptSuffix)

	cmd.Flag("pd-separated", "Prefill/decode disaggregation: profile the --profile-prefill-url or --profile-decode-url servers.").BoolVar(&f.pdSeparated)
	list("profile-prefill-url", "Prefill servers to profile.", &f.profilePrefillURL)
	list("profile-decode-url", "Decode servers to profile.", &f.profileDecodeURL)
	cmd.Flag("flush-cache", "Flush the prefix cache after warmup (POST /flush_cache; /reset_prefix_cache for vllm).").BoolVar(&f.flushCache)
	cmd.Flag("flush-cache-timeout", "Seconds the server may take to flush.").Default("60").Float64Var(&f.flushCacheTimeout)
	cmd.Flag("warmup-requests", "Warmup requests (the first prompt, at most 32 output tokens).").Default("1").IntVar(&f.warmupRequests)
	cmd.Flag("tokenize-prompt", "Send random prompts as input_ids (backend sglang only).").BoolVar(&f.tokenizePrompt)

	cmd.Flag("gsp-num-groups", "generated-shared-prefix: groups.").Default("64").IntVar(&f.gspNumGroups)
	cmd.Flag("gsp-prompts-per-group", "generated-shared-prefix: prompts per group.").Default("16").IntVar(&f.gspPromptsPerGroup)
	cmd.Flag("gsp-system-prompt-len", "generated-shared-prefix: system prompt tokens.").Default("2048").IntVar(&f.gspSystemPromptLen)
	cmd.Flag("gsp-question-len", "generated-shared-prefix: question tokens.").Default("128").IntVar(&f.gspQuestionLen)
	cmd.Flag("gsp-output-len", "generated-shared-prefix: output tokens.").Default("256").IntVar(&f.gspOutputLen)
	cmd.Flag("gsp-range-ratio", "generated-shared-prefix: length range ratio (1.0 fixes lengths).").Default("1.0").Float64Var(&f.gspRangeRatio)
	cmd.Flag("gsp-fast-prepare", "generated-shared-prefix: skip prompt statistics.").BoolVar(&f.gspFastPrepare)
	cmd.Flag("gsp-send-routing-key", "generated-shared-prefix: send X-SMG-Routing-Key.").BoolVar(&f.gspSendRoutingKey)
	cmd.Flag("gsp-ordered", "generated-shared-prefix: do not shuffle.").BoolVar(&f.gspOrdered)
	cmd.Flag("gsp-num-turns", "generated-shared-prefix: user turns per conversation; above 1 each turn is its own request carrying the real replies so far (chat backends only).").Default("1").IntVar(&f.gspNumTurns)
	cmd.Flag("gsp-group-distribution", "generated-shared-prefix: uniform or zipf.").Default("uniform").EnumVar(&f.gspGroupDistribution, "uniform", "zipf")
	cmd.Flag("gsp-zipf-alpha", "generated-shared-prefix: zipf alpha (required for zipf).").Float64Var(&f.gspZipfAlpha)

	cmd.Flag("mooncake-slowdown-factor", "mooncake: stretch the trace timestamps.").Default("1.0").Float64Var(&f.mooncakeSlowdownFactor)
	cmd.Flag("mooncake-num-rounds", "mooncake: rounds per session.").Default("1").IntVar(&f.mooncakeNumRounds)
	cmd.Flag("mooncake-workload", "mooncake: mooncake, conversation, synthetic or toolagent (only names the trace; pass --dataset-path).").Default("conversation").EnumVar(&f.mooncakeWorkload, "mooncake", "conversation", "synthetic", "toolagent")

	track(cmd.Flag("fake-prefill", "Not supported.")).BoolVar(&f.fakePrefill)
	cmd.Flag("tag", "Free text copied into the JSONL record.").StringVar(&f.tag)
	list("header", "Extra request header K=V (several after one flag, or repeated).", &f.headers)

	list("goodput", "vLLM goodput SLOs, e.g. ttft:500 tpot:50 e2el:2000 (milliseconds).", &f.goodput)
	cmd.Flag("burstiness", "Gamma shape of arrival gaps (vLLM): 1 is Poisson, < 1 burstier.").Default("1.0").Float64Var(&f.burstiness)
	cmd.Flag("percentile-metrics", "vLLM: comma-separated metrics whose percentiles to report (ttft,tpot,itl,e2el). Default: bench_serving's table.").StringVar(&f.percentileMetrics)
	cmd.Flag("metric-percentiles", "vLLM: comma-separated percentiles, e.g. 50,90,99. Default: bench_serving's 90,95,99.").StringVar(&f.metricPercentiles)
	cmd.Flag("ramp-up-strategy", "vLLM: linear or exponential rate ramp from --ramp-up-start-rps to --ramp-up-end-rps.").EnumVar(&f.rampUpStrategy, "linear", "exponential")
	cmd.Flag("ramp-up-start-rps", "vLLM: ramp start rate.").Float64Var(&f.rampUpStartRPS)
	cmd.Flag("ramp-up-end-rps", "vLLM: ramp end rate.").Float64Var(&f.rampUpEndRPS)

	compatNames := make([]string, 0, len(bench.CompatOptions))
	for _, o := range bench.CompatOptions {
		compatNames = append(compatNames, o.Name)
	}
	cmd.Flag("compat", "Restore bench_serving's numbers where servingprobe deliberately differs: all, or a comma-separated list of "+strings.Join(compatNames, ", ")+".").StringsVar(&f.compat)
	cmd.Flag("strict-json", "Write an infinite request rate as the string \"inf\" instead of bench_serving's bare Infinity, so that the JSONL is valid JSON.").BoolVar(&f.strictJSON)
	cmd.Flag("max-duration", "Stop the measured run after this long (cancelling requests in flight); 0 means no limit.").Default("0s").DurationVar(&f.maxDuration)

	addRemoteFlags(cmd, &f.remote)
	addSweepFlags(cmd, &f.sweep)

	cmd.Arg("values", "").Hidden().SetValue(&tailValue{tr: tr})
	return f
}

// unsupported are the flags we parse, so that scripts written for
// bench_serving get a clear message instead of "unknown flag".
var unsupported = map[string]string{
	"fake-prefill":           "the bootstrap_host/bootstrap_room fields of PD fake prefill are not implemented",
	"cache-report":           "the cache hit report is not implemented",
	"print-requests":         "printing requests is not implemented; use --log.level=debug",
	"dataset-offset":         "the agentic-trace dataset is not implemented",
	"agentic-max-turns":      "the agentic-trace dataset is not implemented",
	"speed-bench-category":   "the speed-bench dataset is not implemented",
	"speed-bench-output-len": "the speed-bench dataset is not implemented",
}

// unsupportedBackends are bench_serving backends we do not speak.
var unsupportedBackends = map[string]string{
	"gserver":          "gRPC is not implemented",
	"sglang-embedding": "embeddings are not implemented",
	"vllm-embedding":   "embeddings are not implemented",
}

// spec turns the flags into a benchrun.Spec, with every problem at once.
func (f *benchFlags) spec(getenv func(string) string) (benchrun.Spec, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	names := make([]string, 0, len(unsupported))
	for n := range unsupported {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if p := f.set[n]; p != nil && *p {
			bad("--%s is not supported: %s", n, unsupported[n])
		}
	}
	if why, ok := unsupportedBackends[f.backend]; ok {
		bad("--backend %s is not supported: %s", f.backend, why)
	}

	s := benchrun.DefaultSpec()
	s.Backend = f.backend
	if _, ok := unsupportedBackends[f.backend]; !ok {
		u, err := benchrun.BaseURL(f.baseURL, f.host, f.port, f.backend)
		if err != nil {
			bad("%w", err)
		}
		s.BaseURL = u
	}
	s.Model, s.ServedModelName, s.Tokenizer = f.model, f.servedModelName, f.tokenizer
	s.Dataset, s.NumPrompts = f.datasetName, f.numPrompts
	o := &s.DatasetOptions
	o.DatasetPath = f.datasetPath
	o.TokenizePrompt = f.tokenizePrompt
	o.PromptSuffix = f.promptSuffix
	o.ApplyChatTemplate = f.applyChatTemplate
	o.SharegptOutputLen, o.SharegptContextLen = f.sharegptOutputLen, f.sharegptContextLen
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = f.randomInputLen, f.randomOutputLen, f.randomRangeRatio
	o.ImageCount, o.RandomImageCount = f.imageCount, f.randomImageCount
	o.ImageResolution, o.ImageFormat, o.ImageContent = f.imageResolution, f.imageFormat, f.imageContent
	o.GSPNumGroups, o.GSPPromptsPerGroup = f.gspNumGroups, f.gspPromptsPerGroup
	o.GSPSystemPromptLen, o.GSPQuestionLen, o.GSPOutputLen = f.gspSystemPromptLen, f.gspQuestionLen, f.gspOutputLen
	o.GSPRangeRatio, o.GSPNumTurns = f.gspRangeRatio, f.gspNumTurns
	o.GSPOrdered, o.GSPFastPrepare, o.GSPSendRoutingKey = f.gspOrdered, f.gspFastPrepare, f.gspSendRoutingKey
	o.GSPGroupDistribution, o.GSPZipfAlpha = f.gspGroupDistribution, f.gspZipfAlpha
	if f.gspSendRoutingKey {
		o.GSPRoutingKeyPrefix = fmt.Sprintf("%08x_%s", uint32(f.seed), time.Now().Format("20060102150405"))
	}
	o.MooncakeSlowdownFactor, o.MooncakeNumRounds = f.mooncakeSlowdownFactor, f.mooncakeNumRounds

	f.checkRanges(bad)
	if f.numPrompts >= 1 {
		if err := datasets.CheckCount(f.datasetName, f.numPrompts, *o); err != nil {
			bad("%w", err)
		}
	}

	s.RequestRate, s.Burstiness = f.requestRate, f.burstiness
	s.UseTraceTimestamps = f.useTraceTimestamps
	s.MaxConcurrency = f.maxConcurrency
	if f.maxConcurrency < 0 || (*f.set["max-concurrency"] && f.maxConcurrency == 0) {
		bad("--max-concurrency must be at least 1")
	}
	s.MaxDuration = f.maxDuration
	s.RampUp = prober.RampStrategy(f.rampUpStrategy)
	s.RampUpStartRPS, s.RampUpEndRPS = f.rampUpStartRPS, f.rampUpEndRPS
	s.Seed = f.seed
	s.WarmupRequests = f.warmupRequests
	s.DisableStream, s.DisableIgnoreEOS = f.disableStream, f.disableIgnoreEOS
	s.Temperature, s.TopP = f.temperature, f.topP
	s.ReturnLogprob, s.TopLogprobsNum, s.LogprobStartLen, s.ReturnRoutedExperts = f.returnLogprob, f.topLogprobsNum, f.logprobStartLen, f.returnRoutedExperts
	for _, v := range f.tokenIDsLogprob {
		id, err := strconv.Atoi(v)
		if err != nil {
			bad("--token-ids-logprob %q: not an integer", v)
			continue
		}
		s.TokenIDsLogprob = append(s.TokenIDsLogprob, id)
	}
	if f.extraRequestBody != "" {
		dec := json.NewDecoder(strings.NewReader(f.extraRequestBody))
		dec.UseNumber() // keep big integers exact
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil {
			bad("--extra-request-body must be a JSON object: %v", err)
		}
		s.ExtraBody = m
	}
	s.LoRANames, s.LoRADistribution, s.LoRAZipfAlpha = f.loraNames, f.loraDistribution, f.loraZipfAlpha
	s.FlushCache = f.flushCache
	s.FlushCacheTimeout = seconds(f.flushCacheTimeout)
	s.ReadyCheckTimeout = seconds(f.readyCheckTimeoutSec)
	s.RequestTimeout = seconds(f.requestTimeoutSec)
	if f.requestTimeoutSec < 0 || math.IsNaN(f.requestTimeoutSec) {
		bad("--request-timeout-sec %g: must be at least 0 (0: no timeout)", f.requestTimeoutSec)
	}
	if f.readyCheckTimeoutSec < 0 || math.IsNaN(f.readyCheckTimeoutSec) {
		bad("--ready-check-timeout-sec must be >= 0")
	}
	s.Profile = benchrun.Profile{
		Enabled: f.profile, Activities: f.profileActivities, StartStep: f.profileStartStep,
		Steps: f.profileSteps, NumSteps: f.profileNumSteps, ByStage: f.profileByStage, Stages: f.profileStages,
		OutputDir: f.profileOutputDir, Prefix: f.profilePrefix,
		PDSeparated: f.pdSeparated, PrefillURLs: f.profilePrefillURL, DecodeURLs: f.profileDecodeURL,
	}
	if s.Profile.OutputDir == "" {
		s.Profile.OutputDir = getenv("SGLANG_TORCH_PROFILER_DIR")
	}
	s.Tag = f.tag

	hdr, err := parseHeaders(f.headers)
	if err != nil {
		bad("%w", err)
	}
	// OPENAI_API_KEY is sent as a bearer token; newest sglang falls back to
	// API_KEY, sent bare. --header wins over both.
	if _, ok := headerKey(hdr, "Authorization"); !ok {
		if k := getenv("OPENAI_API_KEY"); k != "" {
			hdr["Authorization"] = "Bearer " + k
		} else if k := getenv("API_KEY"); k != "" {
			hdr["Authorization"] = k
		}
	}
	if len(hdr) > 0 {
		s.Headers = hdr
	}
	c, err := bench.ParseCompat(strings.Join(f.compat, ","))
	if err != nil {
		bad("--compat: %w", err)
	}
	s.Compat = c
	if s.Goodput, err = bench.ParseGoodput(f.goodput); err != nil {
		bad("--goodput: %w", err)
	}
	if len(s.Goodput) == 0 {
		s.Goodput = nil
	}
	if f.percentileMetrics != "" || f.metricPercentiles != "" {
		// vLLM's defaults apply to whichever of the two is left out.
		pm, mp := f.percentileMetrics, f.metricPercentiles
		if pm == "" {
			pm = "ttft,tpot,itl"
		}
		if mp == "" {
			mp = "99"
		}
		if s.PercentileMetrics, err = bench.ParsePercentileMetrics(pm); err != nil {
			bad("--percentile-metrics: %w", err)
		}
		if s.MetricPercentiles, err = bench.ParseMetricPercentiles(mp); err != nil {
			bad("--metric-percentiles: %w", err)
		}
	}
	// The plot and the report draw from the per-request times; the JSONL
	// carries them only with --output-details.
	s.Details = f.outputDetails || f.plotThroughput || f.report != ""
	s.DetailsNoTexts = !f.outputDetails
	s.SpoolDetails = f.outputDetails && !f.plotThroughput && f.report == ""
	s.Stats = f.stats
	if envflag.Truthy(getenv("SGLANG_USE_MODELSCOPE")) {
		bad("SGLANG_USE_MODELSCOPE is set: ModelScope downloads are not supported; pass --tokenizer with a local path")
	}
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// checkRanges refuses dataset values argparse would take but that make no
// run (a zero or negative length sent empty prompts). Each message names
// the flag and the range it allows; the run's own ranges (prompt count,
// rate, concurrency) are benchrun.Spec.Validate's, shared with the API.
func (f *benchFlags) checkRanges(bad func(string, ...any)) {
	atLeast := func(name string, v, lo int) {
		if v < lo {
			bad("--%s %d: must be at least %d", name, v, lo)
		}
	}
	atLeast("random-input-len", f.randomInputLen, 1)
	atLeast("random-output-len", f.randomOutputLen, 1)
	atLeast("image-count", f.imageCount, 1)
	atLeast("sharegpt-output-len", f.sharegptOutputLen, 0)
	atLeast("sharegpt-context-len", f.sharegptContextLen, 0)
	atLeast("top-logprobs-num", f.topLogprobsNum, 0)
	atLeast("gsp-num-groups", f.gspNumGroups, 1)
	atLeast("gsp-prompts-per-group", f.gspPromptsPerGroup, 1)
	atLeast("gsp-system-prompt-len", f.gspSystemPromptLen, 0)
	atLeast("gsp-question-len", f.gspQuestionLen, 1)
	atLeast("gsp-output-len", f.gspOutputLen, 1)
	atLeast("gsp-num-turns", f.gspNumTurns, 1)
	atLeast("mooncake-num-rounds", f.mooncakeNumRounds, 1)
	if r := f.randomRangeRatio; !(r >= 0 && r <= 1) {
		bad("--random-range-ratio %g: must be between 0 and 1", r)
	}
	if r := f.gspRangeRatio; !(r >= 0 && r <= 1) {
		bad("--gsp-range-ratio %g: must be between 0 and 1", r)
	}
	if v := f.mooncakeSlowdownFactor; !(v > 0) || math.IsInf(v, 0) {
		bad("--mooncake-slowdown-factor %g: must be above 0", v)
	}
	if v := f.flushCacheTimeout; v < 0 || math.IsNaN(v) {
		bad("--flush-cache-timeout %g: must be at least 0", v)
	}
}

func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(time.Second))
}

// parseHeaders reads --header K=V values.
func parseHeaders(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %q: want K=V", v)
		}
		out[k] = val
	}
	return out, nil
}

func headerKey(h map[string]string, key string) (string, bool) {
	for k := range h {
		if strings.EqualFold(k, key) {
			return k, true
		}
	}
	return "", false
}
