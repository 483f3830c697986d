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
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/envflag"
	"github.com/servingprobe/servingprobe/internal/nearest"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// benchFlags are the bench command's flags: bench_serving's, with their
// names and defaults, vLLM's additions, and ours. Every bench parameter
// binds straight into spec, the one description of a bench; what is left
// here says where the server is (host, port) and what to do with the
// result (files, plot, report, progress bar), which are no part of it.
type benchFlags struct {
	spec  runner.Spec
	sweep sweepFlags

	host string
	port int

	outputFile     string
	outputDetails  bool
	printRequests  bool
	plotThroughput bool
	report         string
	disableTqdm    bool
	strictJSON     bool

	// headers are --header's K=V values; the spec holds them as a map
	// once the API key from the environment is added.
	headers []string
	// shardCount is --shard-count: the shard index then comes from
	// JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it.
	shardCount int
	// mooncakeWorkload only names the trace (--dataset-path reads it).
	mooncakeWorkload string
	remote           remoteFlags
	// gate is --baseline and --fail-on (compare.go).
	gate gateFlags
	// runs is --runs and the interleaved A/B set (bench_runs.go).
	runs runsFlags
	// vllm is vllm bench serve's own flags (bench_vllm.go).
	vllm vllmFlags

	// set records which flags the user gave; keys maps each flag to the
	// Spec's JSON key it sets and back.
	set  map[string]*bool
	keys flagKeys
}

// flagKeys is the one mapping between the bench flags and the JSON keys
// of the Spec they set (a bench window body's names, runner.SpecKeys),
// written as each flag is registered (binder.flag): --remote translates
// the flags given into body keys with it, and the Spec's Problems, which
// name keys, name flags with it. A key set by several flags (an older or
// vLLM's name) is named by the first registered.
type flagKeys struct {
	key  map[string]string // flag name → JSON key
	flag map[string]string // JSON key → flag name
}

func (k *flagKeys) add(name, key string) {
	if k.key == nil {
		k.key, k.flag = map[string]string{}, map[string]string{}
	}
	k.key[name] = key
	if _, ok := k.flag[key]; !ok {
		k.flag[key] = name
	}
}

// flagName is "--" and the flag that sets a Spec's JSON key; a key that
// no flag sets is shown as it is.
func (k *flagKeys) flagName(key string) string {
	if name, ok := k.flag[key]; ok {
		return "--" + name
	}
	return key
}

// flagValue is a bench flag's value: argparse's habits for kingpin. The
// last of several occurrences wins (IsCumulative keeps kingpin from
// refusing a repeat), and argCheck lets the command line's pre-pass
// refuse a malformed value with argparse's message, which names the flag.
// A refusal by Set is named by nameFlagErrors, as every flag's is.
type flagValue interface {
	kingpin.Value
	argCheck(s string) error
}

// scalar binds one value of type T.
type scalar[T any] struct {
	p     *T
	parse func(string) (T, error)
	show  func(T) string
}

func (v *scalar[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}
func (v *scalar[T]) String() string          { return v.show(*v.p) }
func (v *scalar[T]) IsCumulative() bool      { return true }
func (v *scalar[T]) argCheck(s string) error { _, err := v.parse(s); return err }

func intValue(p *int) flagValue {
	return &scalar[int]{p: p, show: strconv.Itoa, parse: func(s string) (int, error) {
		n, err := strconv.ParseInt(s, 0, strconv.IntSize)
		if err != nil {
			return 0, fmt.Errorf("invalid int value: '%s'", s)
		}
		return int(n), nil
	}}
}

func int64Value(p *int64) flagValue {
	return &scalar[int64]{p: p, show: func(v int64) string { return strconv.FormatInt(v, 10) }, parse: func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid int value: '%s'", s)
		}
		return n, nil
	}}
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid float value: '%s'", s)
	}
	return f, nil
}

func floatValue(p *float64) flagValue {
	return &scalar[float64]{p: p, parse: parseFloat, show: pyfmt.Float}
}

// secondsValue is a float number of seconds held as a duration.
func secondsValue(p *time.Duration) flagValue {
	return &scalar[time.Duration]{p: p,
		show: func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) },
		parse: func(s string) (time.Duration, error) {
			f, err := parseFloat(s)
			if err != nil {
				return 0, err
			}
			if f < 0 || math.IsNaN(f) {
				return 0, fmt.Errorf("must be at least 0, got %s", s)
			}
			return runner.Seconds(f), nil
		}}
}

func stringValue(p *string) flagValue {
	return &scalar[string]{p: p, show: func(s string) string { return s }, parse: func(s string) (string, error) { return s, nil }}
}

func enumValue(p *string, choices ...string) flagValue {
	return &scalar[string]{p: p, show: func(s string) string { return s }, parse: func(s string) (string, error) {
		if !slices.Contains(choices, s) {
			quoted := make([]string, len(choices))
			for i, c := range choices {
				quoted[i] = "'" + c + "'"
			}
			return "", fmt.Errorf("invalid choice: '%s' (choose from %s)", s, strings.Join(quoted, ", "))
		}
		return s, nil
	}}
}

// loraAssignmentValue is vLLM's --lora-assignment, written onto the same
// field as --lora-request-distribution: random is uniform (vLLM draws
// random.choice for each request), round-robin is its own distribution.
// It shows no default, which would otherwise be applied as a choice.
func loraAssignmentValue(p *string) flagValue {
	return &scalar[string]{p: p, show: func(string) string { return "" }, parse: func(s string) (string, error) {
		switch s {
		case "random":
			return datasets.LoRAUniform, nil
		case "round-robin":
			return datasets.LoRARoundRobin, nil
		}
		return "", fmt.Errorf("invalid choice: '%s' (choose from 'random', 'round-robin')", s)
	}}
}

// jsonObjectValue is --extra-request-body: a JSON object, big integers
// kept exact.
// optFloatValue binds a float that is sent only when given (nil: unset).
func optFloatValue(p **float64) flagValue {
	return &scalar[*float64]{p: p,
		show: func(v *float64) string {
			if v == nil {
				return ""
			}
			return pyfmt.Float(*v)
		},
		parse: func(s string) (*float64, error) {
			f, err := parseFloat(s)
			return &f, err
		}}
}

// optIntValue binds an int that is sent only when given (nil: unset).
func optIntValue(p **int) flagValue {
	return &scalar[*int]{p: p,
		show: func(v *int) string {
			if v == nil {
				return ""
			}
			return strconv.Itoa(*v)
		},
		parse: func(s string) (*int, error) {
			n, err := strconv.ParseInt(s, 0, strconv.IntSize)
			if err != nil {
				return nil, fmt.Errorf("invalid int value: '%s'", s)
			}
			v := int(n)
			return &v, nil
		}}
}

func jsonObjectValue(p *map[string]any) flagValue {
	return &scalar[map[string]any]{p: p,
		show: func(m map[string]any) string {
			if m == nil {
				return ""
			}
			b, _ := json.Marshal(m)
			return string(b)
		},
		parse: func(s string) (map[string]any, error) {
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			// Decoded as any, so that a value of the wrong kind is named
			// in JSON's words, not as the Go type it failed to fill.
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("must be a JSON object: %v", err)
			}
			if dec.More() {
				return nil, errors.New("must be one JSON object, got more after it")
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("must be a JSON object, got %s", jsonKind(v))
			}
			return m, nil
		}}
}

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return "another value"
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

// listValue is a list flag: the first value the user gives replaces the
// default, and each value goes through add.
type listValue struct {
	tr    *listTracker
	set   bool
	reset func()
	add   func(string) error
	name  string
}

func (v *listValue) Set(s string) error {
	if !v.set { // the first user value replaces the default
		v.reset()
		v.set = true
	}
	v.tr.last = v
	return v.addNamed(s)
}

// addNamed names the flag itself: tailValue adds positional tokens,
// which no flag's Set sees.
func (v *listValue) addNamed(s string) error {
	if err := v.add(s); err != nil {
		return &flagError{v.name, err}
	}
	return nil
}

// String is empty: a list's default is its field's initial value, which
// kingpin must not set again (that would make it the list tailValue
// appends to).
func (v *listValue) String() string          { return "" }
func (v *listValue) setName(name string)     { v.name = name }
func (v *listValue) IsCumulative() bool      { return true }
func (v *listValue) argCheck(s string) error { return nil }

// tailValue takes positional tokens for the last list flag.
type tailValue struct{ tr *listTracker }

func (v *tailValue) Set(s string) error {
	if v.tr.last == nil {
		return fmt.Errorf("unexpected argument %q (bench takes no positional arguments)", s)
	}
	return v.tr.last.addNamed(s)
}
func (v *tailValue) String() string     { return "" }
func (v *tailValue) IsCumulative() bool { return true }

// binder registers the bench flags.
type binder struct {
	cmd *kingpin.CmdClause
	f   *benchFlags
	tr  *listTracker
}

// flag registers a flag that sets the Spec's JSON key key ("" for a flag
// that is no bench parameter); its default is v's current value.
func (b *binder) flag(name, key, help string, v kingpin.Value) *kingpin.FlagClause {
	if key != "" {
		b.f.keys.add(name, key)
	}
	if n, ok := v.(interface{ setName(string) }); ok {
		n.setName(name)
	}
	set := new(bool)
	b.f.set[name] = set
	fc := b.cmd.Flag(name, help).IsSetByUser(set)
	if d := v.String(); d != "" {
		fc = fc.Default(d)
	}
	fc.SetValue(v)
	return fc
}

// bool registers a boolean flag.
func (b *binder) bool(name, key, help string, p *bool) {
	if key != "" {
		b.f.keys.add(name, key)
	}
	set := new(bool)
	b.f.set[name] = set
	b.cmd.Flag(name, help).IsSetByUser(set).BoolVar(p)
}

// strings registers a list flag of strings.
func (b *binder) strings(name, key, help string, p *[]string) {
	b.flag(name, key, help, &listValue{tr: b.tr,
		reset: func() { *p = nil },
		add:   func(s string) error { *p = append(*p, s); return nil },
	})
}

// key is the JSON key of a flag that sets the Spec field of the same
// name ("num-prompts" sets "num_prompts").
func key(name string) string { return strings.ReplaceAll(name, "-", "_") }

func addBenchFlags(cmd *kingpin.CmdClause) *benchFlags {
	f := &benchFlags{spec: runner.DefaultSpec(), host: "0.0.0.0", mooncakeWorkload: "conversation",
		set: map[string]*bool{}}
	f.spec.Stats = bench.StatsExact
	b := &binder{cmd: cmd, f: f, tr: &listTracker{}}
	s, o := &f.spec, &f.spec.Options
	p := func(name, help string, v kingpin.Value) { b.flag(name, key(name), help, v) }
	local := func(name, help string, v kingpin.Value) { b.flag(name, "", help, v) }

	p("backend", "Backend: "+strings.Join(prober.BackendNames(), ", ")+". (bench_serving's gserver is not supported: its request function raises NotImplementedError.)", stringValue(&s.Backend))
	p("base-url", "Server base URL; overrides --host and --port.", stringValue(&s.BaseURL))
	local("host", "Server host.", stringValue(&f.host))
	local("port", "Server port (default: the backend's, as bench_serving).", intValue(&f.port))
	p("request-timeout-sec", "Each request's timeout, warmup included, body and all; a request past it is a timeout failure. 0: none.", secondsValue(&s.RequestTimeout))
	p("ready-check-timeout-sec", "Wait this long for GET /v1/models to answer 200; 0 skips the check.", secondsValue(&s.ReadyCheckTimeout))

	p("dataset-name", "Dataset: random, random-ids, sharegpt, generated-shared-prefix, image (or sglang's older random-image), mooncake, custom, openai, mmmu, speed-bench, longbench-v2 (or longbench_v2), autobench, agentic-trace, token-trace (token ids: sglang backends), burstgpt, azure-trace (Azure's LLM inference traces), audio (WAV clips: chat backends), dynamic (a plan of phases: --dynamic-workload-path), embedding (embedding backends only).", stringValue(&s.Dataset))
	p("dataset-path", "Dataset file (sharegpt, longbench-v2: downloaded from the hub when empty; random: the embedded corpus when empty).", stringValue(&o.DatasetPath))
	p("dynamic-workload-path", "dynamic: the JSON plan of phases (name, duration, request_rate, input_len, output_len; optional max_concurrency, range_ratio, extra_request_body, source, arrival_pattern), sent one phase after another at the plan's times.", stringValue(&o.DynamicWorkloadPath))
	p("dataset-offset", "agentic-trace: start at this conversation (wrapping around).", intValue(&o.DatasetOffset))
	p("agentic-max-turns", "agentic-trace: keep the first turns of each conversation (0: all).", intValue(&o.AgenticMaxTurns))
	p("speed-bench-category", "speed-bench: low_entropy, mixed or high_entropy (default: all).", stringValue(&o.SpeedBenchCategory))
	p("speed-bench-output-len", "speed-bench: output tokens of every request.", intValue(&o.SpeedBenchOutputLen))

	p("model", "Model name (default: the first of GET /v1/models).", stringValue(&s.Model))
	p("served-model-name", "The model name sent in requests, if it differs from --model.", stringValue(&s.ServedModelName))
	p("tokenizer", "Tokenizer: a tokenizer.json, its directory, or a hub id[@revision] (default: GET /model_info, then --model).", stringValue(&s.Tokenizer))
	p("num-prompts", "Number of prompts.", intValue(&s.NumPrompts))

	p("sharegpt-output-len", "Output length of every ShareGPT request (default: the completion's length).", intValue(&o.SharegptOutputLen))
	p("sharegpt-context-len", "Drop ShareGPT entries whose prompt plus output exceed this.", intValue(&o.SharegptContextLen))
	p("random-input-len", "Input tokens of the random datasets.", intValue(&o.RandomInputLen))
	p("random-output-len", "Output tokens of the random datasets.", intValue(&o.RandomOutputLen))
	p("random-range-ratio", "Lengths are uniform on [max(1, L*r), L].", floatValue(&o.RandomRangeRatio))
	p("conversation-turns", "conversation: user turns per conversation, each resending the history (default 3).", intValue(&o.ConversationTurns))
	p("conversation-turn-input-len", "conversation: input tokens of every user turn after the first, which takes --random-input-len (default 64).", intValue(&o.ConversationTurnInputLen))

	p("audio-duration", "audio: seconds of each clip (16 kHz mono 16-bit WAV noise).", floatValue(&o.AudioDuration))
	p("audio-count", "audio: clips per request (0: the text alone).", intValue(&o.AudioCount))
	b.bool("random-audio-count", "random_audio_count", "audio: draw the clip count uniformly from 1..--audio-count.", &o.RandomAudioCount)
	p("image-count", "Images per request.", intValue(&o.ImageCount))
	p("image-resolution", "4k, 1080p, 720p, 360p, HxW or random:<minH>x<minW>-<maxH>x<maxW>.", stringValue(&o.ImageResolution))
	b.bool("random-image-count", "random_image_count", "Draw the image count uniformly from 1..--image-count.", &o.RandomImageCount)
	b.flag("random-image-num-images", "image_count", "sglang's older name of --image-count (with --dataset-name random-image, the older name of image).", intValue(&o.ImageCount))
	b.flag("random-image-resolution", "image_resolution", "sglang's older name of --image-resolution.", stringValue(&o.ImageResolution))
	p("image-format", "jpeg or png.", enumValue(&o.ImageFormat, "jpeg", "png"))
	p("image-content", "random or blank.", enumValue(&o.ImageContent, "random", "blank"))

	p("request-rate", "Requests per second; inf sends all at once. Poisson (or --burstiness gamma) arrivals on an absolute schedule.", floatValue(&s.RequestRate))
	b.bool("use-trace-timestamps", "use_trace_timestamps", "Schedule by the dataset's trace timestamps (bench_serving only prints 'trace'; servingprobe replays them).", &s.UseTraceTimestamps)
	p("max-concurrency", "Requests in flight at most; arrivals queue on the client and the wait is reported.", intValue(&s.MaxConcurrency))
	local("output-file", "JSONL file the result is appended to (default: bench_serving's name).", stringValue(&f.outputFile))
	b.bool("output-details", "", "Add per-request arrays to the JSONL record.", &f.outputDetails)
	local("baseline", "After the run (the last of --runs), compare its records with every record of this JSONL file, as servingprobe compare does.", stringValue(&f.gate.baseline))
	local("fail-on", "With --baseline (or --ab-base-url): regression bounds such as 'ttft:p99>+5%,output_throughput<-3%'; exit 1 when a figure changed beyond its bound and, with two runs or more a side, the change is significant.", stringValue(&f.gate.failOn))
	p("runs", "Run the benchmark this many times, each a full record appended to the output file, so that compare and --baseline weigh a change against the drift between runs (one run cannot tell them apart).", intValue(&s.Runs))
	p("runs-pause-sec", "The longest wait between two runs of --runs: the next run starts once the server is idle again (its queue gauges at 0, or else a probe's first token as quick as before the set), or after this many seconds. 0: at once.", secondsValue(&s.RunsPause))
	local("ab-base-url", "Interleaved A/B: alternate --runs runs between the server and this one (A B B A ...), so that drift hits both alike; its records go to --ab-output-file, and its runs are compared with the first server's (--fail-on gates them).", stringValue(&f.runs.abURL))
	local("ab-output-file", "JSONL file the --ab-base-url server's runs are appended to.", stringValue(&f.runs.abOutput))
	p("shard", "Run part I of a run split across N processes (I/N, I from 0): the prompts whose index is I mod N, each at the time the single run would send it; max concurrency split; warm-up, cache flush and profiler on shard 0 only. Merge the records with servingprobe merge.", shardValue(&s.Shard))
	local("shard-count", "The N of --shard, with I from the environment variable JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's pod index).", intValue(&f.shardCount))
	p("run-id", "The id a sharded run's records share (default: a hash of the flags and the seed).", stringValue(&s.RunID))
	p("start-at", "Start the measured run at this RFC 3339 time, or at the time held in this file; a late start is recorded and reported.", stringValue(&s.StartAt))
	p("stats", "exact keeps every sample (4 bytes an inter-token gap) for NumPy's percentiles; sketch keeps every latency in quantile sketches (1% relative error; means, maxima and counts exact; peaks on a 10 ms grid; labelled in the table and JSONL), so that memory does not grow with the requests of a long run.", enumValue(&s.Stats, bench.StatsExact, bench.StatsSketch))
	b.bool("print-requests", "", "Print bench_serving's rid=... message=\"request start\" and \"request end\" lines (the request's input and output as Python reprs) to stdout for each request, warm-up included, for every backend (bench_serving allows only sglang-oai-chat); written by a goroutine of its own, off the requests' path.", &f.printRequests)
	b.bool("disable-tqdm", "", "No progress bar.", &f.disableTqdm)
	b.bool("disable-stream", "disable_stream", "Non-streaming requests.", &s.DisableStream)

	b.bool("return-logprob", "return_logprob", "Ask for logprobs (sglang /generate; completions with --top-logprobs-num).", &s.ReturnLogprob)
	p("top-logprobs-num", "Top logprobs per token.", intValue(&s.TopLogprobsNum))
	b.flag("token-ids-logprob", "token_ids_logprob", "Token ids whose logprobs to return (sglang /generate).", &listValue{tr: b.tr,
		reset: func() { s.TokenIDsLogprob = nil },
		add: func(v string) error {
			id, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q: not an integer", v)
			}
			s.TokenIDsLogprob = append(s.TokenIDsLogprob, id)
			return nil
		},
	})
	p("logprob-start-len", "sglang /generate logprob_start_len.", intValue(&s.LogprobStartLen))
	b.bool("return-routed-experts", "return_routed_experts", "sglang /generate return_routed_experts.", &s.ReturnRoutedExperts)
	b.bool("cache-report", "cache_report", "Print bench_serving's Cache Hit Details (prompt tokens the server served from its prefix cache, from sglang's sglext or meta_info, else the usage block's cached_tokens) and add cache_report to the JSONL; on sglang's OpenAI routes each request asks for return_cached_tokens_details.", &s.CacheReport)
	p("cost-per-hour", "Price of the serving hardware per hour in USD (>= 0): prints and records the cost per million input and per million output tokens, each the hour's price x the run's duration / that side's tokens x 1e6 (the whole price charged to each side, not split).", floatValue(&s.CostPerHour))

	p("seed", "Seed of prompt sampling, LoRA picks and arrivals.", int64Value(&s.Seed))
	b.bool("disable-ignore-eos", "disable_ignore_eos", "Do not send ignore_eos (it is sent as true by default).", &s.DisableIgnoreEOS)
	p("temperature", "Sampling temperature (sglang /generate and the OpenAI backends).", floatValue(&s.Temperature))
	p("top-p", "Top-p (sglang /generate and the OpenAI backends, sent when < 1).", floatValue(&s.TopP))
	p("top-k", "vLLM: top_k in every request body (OpenAI backends only).", optIntValue(&s.TopK))
	p("min-p", "vLLM: min_p in every request body (OpenAI backends only).", optFloatValue(&s.MinP))
	p("frequency-penalty", "vLLM: frequency_penalty in every request body (OpenAI backends only).", optFloatValue(&s.FrequencyPenalty))
	p("presence-penalty", "vLLM: presence_penalty in every request body (OpenAI backends only).", optFloatValue(&s.PresencePenalty))
	p("repetition-penalty", "vLLM: repetition_penalty in every request body (OpenAI backends only).", optFloatValue(&s.RepetitionPenalty))
	p("chat-template-kwargs", "A JSON object sent as chat_template_kwargs in every request body (chat backends only), e.g. '{\"enable_thinking\": false}'.", jsonObjectValue(&s.ChatTemplateKwargs))
	b.bool("insecure", "insecure", "vLLM: do not verify the server's TLS certificate.", &s.Insecure)
	p("request-id-prefix", "vLLM: send each measured request's x-request-id header as this prefix and the request's index (0, 1, ...).", stringValue(&s.RequestIDPrefix))
	p("extra-request-body", "A JSON object merged into every request body, last.", jsonObjectValue(&s.ExtraBody))
	addCheckFlags(b, s)
	b.bool("apply-chat-template", "apply_chat_template", "Render prompts with the tokenizer's chat template.", &o.ApplyChatTemplate)

	b.bool("profile", "profile.enabled", "POST /start_profile before and /stop_profile after the run.", &s.Profile.Enabled)
	b.bool("plot-throughput", "", "After the table, plot output tokens/s and requests in flight over the run, in text (80 columns).", &f.plotThroughput)
	local("report", "Write a self-contained HTML report of the run (or of every sweep point) to this file, after the results. If only the report fails, bench says so and exits 3.", stringValue(&f.report))
	b.strings("profile-activities", "profile.activities", "Profiler activities (CPU GPU CUDA_PROFILER XPU MEM).", &s.Profile.Activities)
	b.flag("profile-start-step", "profile.start_step", "Profiler start step.", intValue(&s.Profile.StartStep))
	b.flag("profile-steps", "profile.steps", "Profiler steps (the server stops by itself).", intValue(&s.Profile.Steps))
	b.flag("profile-num-steps", "profile.num_steps", "Profiler steps (the server stops by itself).", intValue(&s.Profile.NumSteps))
	b.bool("profile-by-stage", "profile.by_stage", "Profile by stage.", &s.Profile.ByStage)
	b.strings("profile-stages", "profile.stages", "Profiler stages.", &s.Profile.Stages)
	b.flag("profile-output-dir", "profile.output_dir", "Profiler output directory.", stringValue(&s.Profile.OutputDir))
	b.flag("profile-prefix", "profile.prefix", "Profiler file prefix.", stringValue(&s.Profile.Prefix))

	b.strings("server-metrics", "server_metrics", "The server's Prometheus endpoint, read at the start and end of the measured run and sampled each second through it for the Server metrics block (repeat for a second source). Default: the base URL's /metrics, when it answers.", &s.ServerMetrics)
	b.bool("no-server-metrics", "no_server_metrics", "Do not read the server's metrics.", &s.NoServerMetrics)
	b.bool("no-traceparent", "no_traceparent", "Send no W3C traceparent header of our own (one per request by default; its trace id goes in the details' trace_ids).", &s.NoTraceparent)
	b.strings("lora-name", "lora_name", "LoRA adapter names (several after one flag, or the flag repeated).", &s.LoRANames)
	p("lora-request-distribution", "uniform, distinct or skewed.", enumValue(&s.LoRADistribution, "uniform", "distinct", "skewed"))
	p("lora-zipf-alpha", "Skew of the skewed distribution (> 1).", floatValue(&s.LoRAZipfAlpha))
	b.strings("lora-modules", "lora_name", "vLLM's name of --lora-name.", &s.LoRANames)
	b.flag("lora-assignment", "lora_request_distribution", "vLLM: random or round-robin, how --lora-modules (--lora-name) adapters are assigned to requests: random is --lora-request-distribution uniform; round-robin gives request i adapter i mod the names' count (distinct, one name allowed). Default: uniform.", loraAssignmentValue(&s.LoRADistribution))
	p("prompt-suffix", "Suffix added to ShareGPT prompts.", stringValue(&o.PromptSuffix))

	b.bool("pd-separated", "profile.pd_separated", "Prefill/decode disaggregation: profile the --profile-prefill-url or --profile-decode-url servers.", &s.Profile.PDSeparated)
	b.strings("profile-prefill-url", "profile.prefill_url", "Prefill servers to profile.", &s.Profile.PrefillURLs)
	b.strings("profile-decode-url", "profile.decode_url", "Decode servers to profile.", &s.Profile.DecodeURLs)
	b.bool("flush-cache", "flush_cache", "Flush the prefix cache after warmup (POST /flush_cache; /reset_prefix_cache for vllm).", &s.FlushCache)
	p("flush-cache-timeout", "Seconds the server may take to flush.", secondsValue(&s.FlushCacheTimeout))
	p("warmup-requests", "Warmup requests (the first prompt, at most 32 output tokens).", intValue(&s.WarmupRequests))
	b.bool("tokenize-prompt", "tokenize_prompt", "Send random prompts as input_ids (backend sglang only).", &o.TokenizePrompt)

	p("gsp-num-groups", "generated-shared-prefix: groups.", intValue(&o.GSPNumGroups))
	p("gsp-prompts-per-group", "generated-shared-prefix: prompts per group.", intValue(&o.GSPPromptsPerGroup))
	p("gsp-system-prompt-len", "generated-shared-prefix: system prompt tokens.", intValue(&o.GSPSystemPromptLen))
	p("gsp-question-len", "generated-shared-prefix: question tokens.", intValue(&o.GSPQuestionLen))
	p("gsp-output-len", "generated-shared-prefix: output tokens.", intValue(&o.GSPOutputLen))
	p("gsp-range-ratio", "generated-shared-prefix: length range ratio (1.0 fixes lengths).", floatValue(&o.GSPRangeRatio))
	b.bool("gsp-fast-prepare", "gsp_fast_prepare", "generated-shared-prefix: skip prompt statistics.", &o.GSPFastPrepare)
	b.bool("gsp-send-routing-key", "gsp_send_routing_key", "generated-shared-prefix: send X-SMG-Routing-Key.", &o.GSPSendRoutingKey)
	b.bool("gsp-ordered", "gsp_ordered", "generated-shared-prefix: do not shuffle.", &o.GSPOrdered)
	p("gsp-num-turns", "generated-shared-prefix: user turns per conversation; above 1 each turn is its own request carrying the real replies so far (chat backends only).", intValue(&o.GSPNumTurns))
	p("gsp-group-distribution", "generated-shared-prefix: uniform or zipf.", enumValue(&o.GSPGroupDistribution, "uniform", "zipf"))
	p("gsp-zipf-alpha", "generated-shared-prefix: zipf alpha (required for zipf).", floatValue(&o.GSPZipfAlpha))

	p("mooncake-slowdown-factor", "mooncake, token-trace, burstgpt, azure-trace: stretch the trace timestamps.", floatValue(&o.MooncakeSlowdownFactor))
	p("mooncake-num-rounds", "mooncake: rounds per session.", intValue(&o.MooncakeNumRounds))
	local("mooncake-workload", "mooncake: mooncake, conversation, synthetic or toolagent (only names the trace; pass --dataset-path).", enumValue(&f.mooncakeWorkload, "mooncake", "conversation", "synthetic", "toolagent"))

	b.bool("fake-prefill", "fake_prefill", "Decode-only benchmarking of a disaggregated sglang server: put sglang's fake bootstrap_host (2.2.2.2) and bootstrap_room 0 in every request body, over --extra-request-body's, as bench_serving does for every backend.", &s.FakePrefill)
	p("tag", "Free text copied into the JSONL record.", stringValue(&s.Tag))
	b.strings("header", "header", "Extra request header K=V (several after one flag, or repeated).", &f.headers)

	b.flag("goodput", "goodput", "vLLM goodput SLOs, e.g. ttft:500 tpot:50 e2el:2000 (milliseconds).", &listValue{tr: b.tr,
		reset: func() { s.Goodput = nil },
		add: func(v string) error {
			g, err := bench.ParseGoodput([]string{v})
			if err != nil {
				return err
			}
			if s.Goodput == nil {
				s.Goodput = bench.Goodput{}
			}
			for k, ms := range g {
				s.Goodput[k] = ms
			}
			return nil
		},
	})
	p("burstiness", "Gamma shape of arrival gaps (vLLM): 1 is Poisson, < 1 burstier.", floatValue(&s.Burstiness))
	b.flag("percentile-metrics", "percentile_metrics", "vLLM: comma-separated metrics whose percentiles to report (ttft,tpot,itl,e2el). Default: bench_serving's table.",
		&scalar[[]string]{p: &s.PercentileMetrics, show: func(v []string) string { return strings.Join(v, ",") }, parse: bench.ParsePercentileMetrics})
	b.flag("metric-percentiles", "metric_percentiles", "vLLM: comma-separated percentiles, e.g. 50,90,99. Default: bench_serving's 90,95,99.",
		&scalar[[]float64]{p: &s.MetricPercentiles, show: func(v []float64) string { return "" }, parse: bench.ParseMetricPercentiles})
	b.flag("ramp-up-strategy", "ramp_up_strategy", "vLLM: linear or exponential rate ramp from --ramp-up-start-rps to --ramp-up-end-rps.",
		&scalar[prober.RampStrategy]{p: &s.RampUp, show: func(r prober.RampStrategy) string { return string(r) }, parse: func(v string) (prober.RampStrategy, error) {
			if r := prober.RampStrategy(v); r == prober.RampLinear || r == prober.RampExponential {
				return r, nil
			}
			return "", fmt.Errorf("invalid choice: '%s' (choose from '%s', '%s')", v, prober.RampLinear, prober.RampExponential)
		}})
	p("ramp-up-start-rps", "vLLM: ramp start rate.", floatValue(&s.RampUpStartRPS))
	p("ramp-up-end-rps", "vLLM: ramp end rate.", floatValue(&s.RampUpEndRPS))

	compatNames := make([]string, 0, len(bench.CompatOptions))
	for _, o := range bench.CompatOptions {
		compatNames = append(compatNames, o.Name)
	}
	var compat []string
	b.flag("compat", "compat", "Restore bench_serving's numbers where servingprobe deliberately differs: all, or a comma-separated list of "+strings.Join(compatNames, ", ")+".", &listValue{tr: b.tr,
		reset: func() { compat = nil },
		add: func(v string) error {
			c, err := bench.ParseCompat(strings.Join(append(compat, v), ","))
			if err != nil {
				return err
			}
			compat, s.Compat = append(compat, v), c
			return nil
		},
	})
	b.bool("strict-json", "", "Write an infinite request rate as the string \"inf\" instead of bench_serving's bare Infinity, so that the JSONL is valid JSON.", &f.strictJSON)
	b.cmd.Flag("max-duration", "Stop the measured run after this long (cancelling requests in flight); 0 means no limit.").Default("0s").IsSetByUser(b.track("max-duration", "max_duration")).DurationVar(&s.MaxDuration)

	addVLLMFlags(b, f)
	addRemoteFlags(cmd, &f.remote)
	addSweepFlags(b, &f.sweep)

	cmd.Arg("values", "").Hidden().SetValue(&tailValue{tr: b.tr})
	return f
}

// track registers a flag's set-by-user record and its JSON key.
func (b *binder) track(name, key string) *bool {
	if key != "" {
		b.f.keys.add(name, key)
	}
	set := new(bool)
	b.f.set[name] = set
	return set
}

// given reports whether the user gave the flag.
func (f *benchFlags) given(name string) bool { p := f.set[name]; return p != nil && *p }

// benchSpec completes the Spec the flags bound into with what needs the
// environment or several flags (the base URL, headers and API key, the
// details the outputs need), and validates it once, every problem at
// once, each named by its flag.
func (f *benchFlags) benchSpec(getenv func(string) string) (runner.Spec, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	s := f.spec
	_, backendErr := prober.LookupBackend(s.Backend)
	if _, ok := errors.AsType[*prober.UnsupportedBackendError](backendErr); ok {
		bad("--%w", backendErr)
	} else if backendErr != nil {
		bad("--backend %q: unknown backend%s (one of %s)", s.Backend, didYouMean(s.Backend, prober.BackendNames()), strings.Join(prober.BackendNames(), ", "))
	} else {
		u, err := runner.BaseURL(s.BaseURL, f.host, f.port, s.Backend)
		if err != nil {
			bad("%w", err)
		}
		s.BaseURL = u
	}
	if f.shardCount != 0 {
		sh, err := shardFromEnv(f.shardCount, s.Shard, getenv)
		if err != nil {
			bad("%w", err)
		}
		s.Shard = sh
	}
	// sglang's random-image is the image dataset (with its flags below).
	s.Dataset = datasets.Canonical(s.Dataset)
	// The dataset is named before anything is sent: a typo must not wait
	// for the server's ready check and model detection to be told.
	if known := datasets.Names(); !slices.Contains(known, s.Dataset) && !strings.HasPrefix(s.Dataset, "random") {
		bad("--dataset-name %q: unknown dataset%s (one of %s)", s.Dataset, didYouMean(s.Dataset, known), strings.Join(known, ", "))
	}
	if f.given("lora-assignment") && f.given("lora-request-distribution") {
		// Both set one field; the later would win without a word.
		bad("--lora-assignment and --lora-request-distribution both say how adapters are assigned: give one")
	}
	if f.given("max-concurrency") && s.MaxConcurrency == 0 {
		// 0 is the Spec's "unbounded"; given on the command line it is a
		// mistake, as in bench_serving.
		bad("--max-concurrency: must be at least 1, got 0")
	}
	o := &s.Options
	if o.GSPSendRoutingKey {
		o.GSPRoutingKeyPrefix = fmt.Sprintf("%08x_%s", uint32(s.Seed), time.Now().Format("20060102150405"))
	}
	if s.Profile.OutputDir == "" {
		s.Profile.OutputDir = getenv("SGLANG_TORCH_PROFILER_DIR")
	}
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
	if s.PercentileMetrics != nil || s.MetricPercentiles != nil {
		// vLLM's defaults apply to whichever of the two is left out.
		if s.PercentileMetrics == nil {
			s.PercentileMetrics, _ = bench.ParsePercentileMetrics("ttft,tpot,itl")
		}
		if s.MetricPercentiles == nil {
			s.MetricPercentiles, _ = bench.ParseMetricPercentiles("99")
		}
	}
	// The plot and the report draw from the per-request times; the JSONL
	// carries them only with --output-details.
	s.Details = f.outputDetails || f.plotThroughput || f.report != ""
	s.DetailsNoTexts = !f.outputDetails
	s.SpoolDetails = f.outputDetails && !f.plotThroughput && f.report == ""
	if envflag.Truthy(getenv("SGLANG_USE_MODELSCOPE")) {
		bad("SGLANG_USE_MODELSCOPE is set: ModelScope downloads are not supported; pass --tokenizer with a local path")
	}
	sw, err := f.sweep.spec()
	if err != nil {
		bad("%w", err)
	}
	if sw != nil && sw.Mode == bench.SweepSLO {
		// A prompt count given fixes every point's size; without one,
		// points are sized by samples and the prompts are enough for them.
		switch {
		case f.given("num-prompts") && !f.given("slo-point-samples"):
			sw.PointSamples = 0
		case !f.given("num-prompts") && sw.PointSamples > 0:
			s.NumPrompts = sw.PointPrompts()
		}
	}
	s.Sweep = sw
	f.vllm.apply(&s, f, bad)
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	if err := s.Validate(); err != nil {
		var p runner.Problems
		if errors.As(err, &p) {
			return s, errors.New(p.Format(f.keys.flagName))
		}
		return s, err
	}
	return s, nil
}

// didYouMean is "; did you mean X?" for the name of known nearest to
// got, or "" when none is near enough to be a typo.
func didYouMean(got string, known []string) string {
	if near := nearest.Name(got, known); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}

// shardValue is --shard I/N.
func shardValue(p **runner.Shard) flagValue {
	return &scalar[*runner.Shard]{p: p,
		show: func(s *runner.Shard) string {
			if s == nil {
				return ""
			}
			return s.String()
		},
		parse: func(v string) (*runner.Shard, error) {
			s, err := runner.ParseShard(v)
			if err != nil {
				return nil, err
			}
			return &s, nil
		}}
}

// shardFromEnv is --shard-count N with the index from
// JOB_COMPLETION_INDEX, which Kubernetes sets in each pod of an Indexed
// Job. A --shard given too must agree with it.
func shardFromEnv(count int, given *runner.Shard, getenv func(string) string) (*runner.Shard, error) {
	v := getenv("JOB_COMPLETION_INDEX")
	if v == "" {
		if given != nil && given.Count == count {
			return given, nil
		}
		return nil, errors.New("--shard-count: JOB_COMPLETION_INDEX is unset (it is set in the pods of an Indexed Job); give --shard I/N instead")
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("--shard-count: JOB_COMPLETION_INDEX=%q is not a whole number", v)
	}
	sh := &runner.Shard{Index: i, Count: count}
	if given != nil && *given != *sh {
		return nil, fmt.Errorf("--shard %s disagrees with --shard-count %d and JOB_COMPLETION_INDEX=%d", given, count, i)
	}
	return sh, nil
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
