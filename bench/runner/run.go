package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/envflag"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/servermetrics"
	"github.com/servingprobe/servingprobe/tokenizer"
	"github.com/servingprobe/servingprobe/tokenizer/hub"
)

// Env is what a run needs from its caller besides the Spec.
type Env struct {
	Logger log.Logger
	// Stdout gets bench_serving's generation lines (#Input tokens, ...);
	// nil discards them.
	Stdout io.Writer
	// Target is the config target a daemon run measures: its
	// http_client_config (auth, TLS) builds the client and its name and
	// Module are copied into every Result. Nil for the CLI.
	Target *config.Target
	Module string
	// Observer, if set, sees every measured Result (the daemon's
	// mode="bench" metrics).
	Observer prober.Observer
	// Progress, if set, is updated as the run goes.
	Progress *prober.Progress
	// Hub downloads tokenizers and the ShareGPT and LongBench-v2 files;
	// nil means hub.FromEnv.
	Hub *hub.Client
	// PauseAfterWarmup is bench_serving's fixed sleep between warmup (and
	// cache flush) and the measured run; nil means 1 s.
	PauseAfterWarmup *time.Duration
	// Getenv reads SGLANG_IS_IN_CI; nil means os.Getenv.
	Getenv func(string) string
	// RequestLog, if set, gets bench_serving's --print-requests line when
	// each request (warm-up included) starts and one when it ends,
	// written by a goroutine of its own so that the requests never wait
	// on it (see bench.RequestLog).
	RequestLog io.Writer
	// OnStart, if set, is called just before the measured run starts
	// (after warmup, cache flush, the pause and the profiler start), with
	// the run's request rate (+Inf: all at once) and max concurrency (0: no
	// limit); a sweep calls it at every point.
	OnStart func(rate float64, maxConcurrency int)
	// ServerMetrics tunes the reads of the server's metrics endpoints;
	// the zero value takes servermetrics' defaults.
	ServerMetrics servermetrics.Options
	// MemoryBudget, if not 0, bounds in bytes what the run holds (its
	// MemoryNeed, charged as the results come in): a run that outgrows
	// it stops with ErrMemoryBudget. The daemon's windows set it; the
	// CLI leaves the machine's memory to the user.
	MemoryBudget uint64
	// DialContext, if set, dials the run's connections to the server
	// (prober.ClientOptions.DialContext): a test's way to a server over
	// in-memory connections in a testing/synctest bubble. Nil, as in
	// production, dials the network.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Prepared is a run whose prompts, pacer and prober are ready.
type Prepared struct {
	Spec   Spec
	Info   prober.BackendInfo
	Client *http.Client
	Model  string // the model sent ("model" field), detected if not given
	Tok    datasets.Tokenizer
	// Prompts are the run's prompts: in memory, or for the random
	// datasets made while the run sends them.
	Prompts *datasets.Source
	Pacer   prober.Pacer
	Prober  *prober.Prober
	// TokenizerName is what the tokenizer was resolved from.
	TokenizerName string
	// watch, set on a point of an SLO search, ends the run once the
	// point's verdict is decided.
	watch *pointWatch
	// deadline, set on a point of an SLO search with a budget, caps the
	// measured run to end just before the budget does; it is known only
	// once the warmup is over.
	deadline time.Time
}

// budgetMargin is what a point leaves of its search's budget after its
// measured run: for its summary and the server_info call.
const budgetMargin = 500 * time.Millisecond

// Prepare resolves the server and builds everything the run sends. It
// talks to the server (ready check, /v1/models, /model_info) and may
// download a tokenizer or the ShareGPT file, but sends no measured request.
func Prepare(ctx context.Context, s Spec, env Env) (_ *Prepared, err error) {
	if env.Logger == nil {
		env.Logger = log.NewNopLogger()
	}
	// What the server answers (a 401 body echoing the Authorization
	// header) reaches the error returned: redacted. (The logger is not
	// wrapped: a wrapper would make every line's caller redact.go.)
	red := specRedactor(s, env)
	defer func() { err = red.RedactError(err) }()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	info, _ := prober.LookupBackend(s.Backend)
	client, err := newClient(s, info, env)
	if err != nil {
		return nil, err
	}
	if err := readyCheck(ctx, client, s.BaseURL, s.Backend, s.ReadyCheckTimeout, nil, red, env.Logger); err != nil {
		return nil, err
	}
	model := s.Model
	if model == "" {
		var several *prober.SeveralModelsError
		model, err = prober.DetectModelWithHeaders(ctx, client, s.BaseURL, nil, red)
		switch {
		case errors.As(err, &several):
			level.Warn(env.Logger).Log("msg", "Model detected", "model", model, "why", strings.Replace(several.Error(), "set the model", "set --model", 1))
		case err != nil:
			return nil, fmt.Errorf("--model is unset and %w", err)
		default:
			level.Info(env.Logger).Log("msg", "Model detected", "model", model, "why", "the one model GET /v1/models lists")
		}
	}
	tok, tokName, err := resolveTokenizer(ctx, s, model, client, env)
	if err != nil {
		return nil, err
	}
	prompts, err := buildPrompts(ctx, s, tok, env)
	if err != nil {
		return nil, err
	}
	if s.RequestIDPrefix != "" {
		prompts = prompts.WithRequestIDs(s.RequestIDPrefix)
	}
	if s.Dataset == "fixed" && prompts.Len() > 0 {
		// A fixed prompt has one length, known only once it is encoded:
		// echo it where bench_serving's records put the input and output
		// lengths (exact, so a range ratio of 1), not the random
		// dataset's defaults that a bench window's request carries.
		o := &s.Options
		first := prompts.First()
		o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = first.PromptLen, first.OutputLen, 1
	}
	if env.Stdout != nil {
		in, out := prompts.Totals()
		fmt.Fprintf(env.Stdout, "#Input tokens: %d\n#Output tokens: %d\n", in, out)
		if n := prompts.Requests(); n != prompts.Len() {
			// Conversations: bench_serving's two lines count every round;
			// the replies each round resends are the server's, not counted.
			fmt.Fprintf(env.Stdout, "#Requests: %d (%d conversations; input counts their user turns, not the replies each round resends)\n", n, prompts.Len())
		}
	}
	pacer, err := newPacer(s, prompts)
	if err != nil {
		return nil, err
	}
	if s, prompts, pacer, err = applyShard(s, prompts, pacer); err != nil {
		return nil, err
	}
	sent := model
	if s.ServedModelName != "" {
		sent = s.ServedModelName
	}
	checks, err := prober.ModuleChecker(info, s.answerModule())
	if err != nil {
		return nil, err
	}
	p := &prober.Prober{
		Checks:  checks,
		Client:  client,
		Backend: info.New(),
		Name:    s.Backend,
		Options: requestOptions(s, info, sent),
		Counter: prober.TokenizerCounter{Tokenizer: tok},
		Module:  env.Module,
		// Every request's error text, and so the table's and the
		// JSONL's, the request log's and the daemon's, is redacted once.
		Redactor: red,
	}
	if env.Target != nil {
		p.Target = env.Target.Name
		p.Limits = prober.Limits{MaxEventBytes: env.Target.MaxEventBytes, MaxResponseBytes: env.Target.MaxResponseBytes}
	}
	return &Prepared{Spec: s, Info: info, Client: client, Model: sent, Tok: tok, Prompts: prompts, Pacer: pacer, Prober: p, TokenizerName: tokName}, nil
}

// specRedactor hides the run's credentials: the daemon target's
// http_client_config and the CLI's headers (--header, OPENAI_API_KEY).
func specRedactor(s Spec, env Env) *config.Redactor {
	var c config.Config
	if env.Target != nil {
		c.Targets = []config.Target{*env.Target}
	}
	return config.NewRedactor(&c).WithHeaders(s.Headers)
}

// newClient builds the client from the daemon target's http_client_config,
// or a plain one for the CLI, and adds the CLI's headers (--header,
// OPENAI_API_KEY) to every request, measured or not.
func newClient(s Spec, info prober.BackendInfo, env Env) (*http.Client, error) {
	t := config.DefaultTarget
	t.Name, t.URL = "bench", s.BaseURL
	if env.Target != nil {
		t = *env.Target
	} else if s.Insecure {
		t.HTTPClientConfig.TLSConfig.InsecureSkipVerify = true
	}
	// Without --max-concurrency every prompt may be in flight at once.
	conc := s.MaxConcurrency
	if conc <= 0 {
		conc = s.NumPrompts
	}
	c, err := prober.NewClient(&t, prober.ClientOptions{Concurrency: max(conc, 1), UserAgent: "servingprobe-bench", NewConnection: s.Compat.NewConnection, UserClock: s.Compat.UserClock,
		DialContext: env.DialContext})
	if err != nil {
		return nil, err
	}
	if len(s.Headers) > 0 {
		h := make(http.Header, len(s.Headers))
		for k, v := range s.Headers {
			if info.NoAuth && strings.EqualFold(k, "Authorization") {
				continue // bench_serving sends trt no auth header
			}
			h.Set(k, v)
		}
		if k, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok && info.APIKeyHeader != "" && !info.NoAuth && h.Get(info.APIKeyHeader) == "" {
			h.Set(info.APIKeyHeader, k) // the same key, where the protocol's own servers look for it
		}
		c.Transport = headerTransport{next: c.Transport, h: h}
	}
	return c, nil
}

// headerTransport sets fixed headers on every request.
type headerTransport struct {
	next http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not modify the caller's request
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// resolveTokenizer follows newest sglang: --tokenizer, else /model_info's
// tokenizer_path or model_path, else the model id. There is no silent
// fallback: every dataset and the retokenized output count need the
// model's own tokenizer, and another one would give wrong token counts.
func resolveTokenizer(ctx context.Context, s Spec, model string, c *http.Client, env Env) (datasets.Tokenizer, string, error) {
	h := env.Hub
	if h == nil {
		h = hub.FromEnv(nil)
	}
	if s.Tokenizer != "" {
		t, err := tokenizer.ResolveAny(ctx, s.Tokenizer, h)
		if err != nil {
			return nil, "", fmt.Errorf("--tokenizer: %w", err)
		}
		return t, s.Tokenizer, nil
	}
	var tried []string
	if name, err := modelInfoTokenizer(ctx, c, s.BaseURL, nil); err == nil {
		t, err := tokenizer.ResolveAny(ctx, name, h)
		if err == nil {
			return t, name, nil
		}
		tried = append(tried, fmt.Sprintf("/model_info's %q: %v", name, err))
	} else {
		tried = append(tried, fmt.Sprintf("GET /model_info: %v", err))
	}
	t, err := tokenizer.ResolveAny(ctx, model, h)
	if err == nil {
		return t, model, nil
	}
	tried = append(tried, fmt.Sprintf("the model %q: %v", model, err))
	return nil, "", fmt.Errorf("no tokenizer: set --tokenizer to a tokenizer.json, its directory or a hub id (tried %s)", strings.Join(tried, "; "))
}

// ShareGPT is where bench_serving downloads its default dataset from.
const (
	shareGPTRepo = "anon8231489123/ShareGPT_Vicuna_unfiltered"
	shareGPTFile = "ShareGPT_V3_unfiltered_cleaned_split.json"
)

// hubDatasets are the datasets bench_serving loads from the Hugging Face
// hub when --dataset-path is unset: the dataset repository and the file
// fetched into the hub cache, whose path then stands for --dataset-path.
var hubDatasets = map[string]struct{ name, repo, file string }{
	"sharegpt":     {"ShareGPT", shareGPTRepo, shareGPTFile},
	"longbench-v2": {"LongBench-v2", datasets.LongBenchV2Repo, datasets.LongBenchV2File},
	"longbench_v2": {"LongBench-v2", datasets.LongBenchV2Repo, datasets.LongBenchV2File},
}

func buildPrompts(ctx context.Context, s Spec, tok datasets.Tokenizer, env Env) (*datasets.Source, error) {
	opts := s.Options
	opts.TraceOrder = s.UseTraceTimestamps
	opts.Compat = s.Compat.RandomLengths
	if ct, ok := tok.(datasets.ChatTemplater); ok {
		opts.ChatTemplate = ct
	}
	if t, ok := tok.(*tokenizer.Tokenizer); ok {
		opts.BOSToken = t.Config().BOSToken
	}
	if d, ok := hubDatasets[s.Dataset]; ok && opts.DatasetPath == "" {
		h := env.Hub
		if h == nil {
			h = hub.FromEnv(nil)
		}
		path, err := h.Download(ctx, hub.Dataset, d.repo, "", d.file)
		if err != nil {
			return nil, fmt.Errorf("--dataset-path is unset and the %s download failed: %w", d.name, err)
		}
		opts.DatasetPath = path
	}
	if s.Dataset == "mooncake" && opts.DatasetPath == "" {
		return nil, errors.New("--dataset-name mooncake needs --dataset-path: downloading the Mooncake traces is not supported")
	}
	ds, err := datasets.New(s.Dataset, opts, tok)
	if err != nil {
		return nil, err
	}
	newRand := func() *rand.Rand { return rand.New(rand.NewPCG(uint64(s.Seed), 0)) }
	rng := newRand()
	picker, err := datasets.NewLoRAPicker(s.LoRANames, s.LoRADistribution, s.LoRAZipfAlpha)
	if err != nil {
		return nil, err
	}
	// The random datasets make their prompts while the run sends them,
	// so that a run of any size starts at once and holds only the prompts
	// about to go out. Not when adapters are drawn (from the generator
	// after every prompt was made) or trace times replayed (the pacer
	// needs them all).
	if st, ok := ds.(datasets.Streamer); ok && picker == nil && !s.UseTraceTimestamps {
		src, ok, err := st.Stream(s.NumPrompts, newRand)
		if err != nil {
			return nil, fmt.Errorf("generate prompts: %w", err)
		}
		if ok {
			if src.Len() == 0 {
				return nil, errors.New("the dataset produced no prompt")
			}
			msg := "Prompts were all made before the run"
			if src.OnDemand() {
				msg = "Prompts are made as the run sends them, the first before it"
			}
			level.Info(env.Logger).Log("msg", msg, "dataset", s.Dataset, "prompts", src.Len())
			return src, nil
		}
	}
	// Say what is being prepared before it takes time, as bench_serving
	// prints: a large image dataset or a file to read is not instant.
	kv := []any{"msg", "Preparing prompts", "dataset", s.Dataset, "num_prompts", s.NumPrompts}
	if s.Dataset == "image" {
		kv = append(kv, "images_per_prompt", opts.ImageCount, "image_resolution", opts.ImageResolution, "image_format", opts.ImageFormat)
	}
	if opts.DatasetPath != "" {
		kv = append(kv, "file", opts.DatasetPath)
	}
	start := time.Now()
	level.Info(env.Logger).Log(kv...)
	prompts, err := ds.Generate(s.NumPrompts, rng)
	if err == nil && (len(prompts) != s.NumPrompts || time.Since(start) >= time.Second) {
		// Say what was made where it is not what was asked (a shared
		// prefix dataset makes groups × prompts per group, a conversation
		// several requests) or where it took time.
		src := datasets.FromPrompts(prompts)
		level.Info(env.Logger).Log("msg", "Prompts prepared", "prompts", len(prompts), "requests", src.Requests(), "took", time.Since(start).Round(10*time.Millisecond))
	}
	if err != nil {
		return nil, fmt.Errorf("generate prompts: %w", err)
	}
	if len(prompts) == 0 {
		return nil, errors.New("the dataset produced no prompt")
	}
	if s.UseTraceTimestamps {
		// sglang's replay sorts the requests by their timestamps first.
		slices.SortStableFunc(prompts, func(a, b datasets.Prompt) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	}
	if err := checkConversations(s, prompts); err != nil {
		return nil, err
	}
	if picker != nil {
		datasets.AssignLoRA(prompts, picker, rng)
	}
	return datasets.FromPrompts(prompts), nil
}

// newPacer picks the arrival process. Trace timestamps (mooncake, the
// dynamic dataset's plan, or --use-trace-timestamps) are really replayed.
func newPacer(s Spec, prompts *datasets.Source) (prober.Pacer, error) {
	seed := uint64(s.Seed)
	switch {
	case s.replaysTimestamps():
		// Such prompts are always in memory (see buildPrompts).
		offsets := make([]time.Duration, prompts.Len())
		for i, p := range prompts.Prompts() {
			offsets[i] = p.Timestamp
		}
		return prober.NewTraceReplay(offsets, 1)
	case s.RampUp != "":
		return prober.NewRamp(s.RampUp, s.RampUpStartRPS, s.RampUpEndRPS, uint64(prompts.Len()), s.Burstiness, seed)
	case math.IsInf(s.RequestRate, 1):
		return prober.Constant{Rate: s.RequestRate}, nil
	default:
		return prober.NewGamma(s.RequestRate, s.Burstiness, seed)
	}
}

// requestOptions maps the flags onto the request body as bench_serving
// does: temperature and top_p only on native /generate, logprob options
// before --extra-request-body (which is merged last and wins).
func requestOptions(s Spec, info prober.BackendInfo, model string) prober.RequestOptions {
	o := prober.RequestOptions{IncludeUsage: true}
	if s.Module != nil {
		o = *s.Module
	}
	o.BaseURL, o.Model = s.BaseURL, model
	o.Stream, o.IgnoreEOS = !s.DisableStream, !s.DisableIgnoreEOS
	o.ResponseFormat, o.Tools, o.ToolChoice = s.ResponseFormat, s.Tools, s.ToolChoice
	if m := s.answerModule(); m.Checks.Any() || m.ResponseFormat != nil || len(m.Tools) > 0 {
		o.IgnoreEOS = false // a judged answer must end where the model ends it
	}
	o.IncludeUsage = o.IncludeUsage && !s.Compat.NoUsage
	o.CompatChatLength = s.Compat.ChatLength
	o.NoTraceparent = o.NoTraceparent || s.NoTraceparent
	extra := map[string]any{}
	if info.SamplingFlags && s.Module == nil {
		// bench_serving's --temperature and --top-p on sglang's /generate,
		// as vLLM's bench serve sends them on the OpenAI routes.
		t := s.Temperature
		o.Temperature = &t
		if s.TopP < 1 {
			p := s.TopP
			o.TopP = &p
		}
	}
	if info.LogprobFields {
		if s.ReturnLogprob {
			extra["return_logprob"] = true
		}
		if s.LogprobStartLen != -1 {
			extra["logprob_start_len"] = s.LogprobStartLen
		}
		if s.TopLogprobsNum > 0 {
			extra["top_logprobs_num"] = s.TopLogprobsNum
		}
		if len(s.TokenIDsLogprob) > 0 {
			extra["token_ids_logprob"] = s.TokenIDsLogprob
		}
		if s.ReturnRoutedExperts {
			extra["return_routed_experts"] = true
		}
	}
	if info.VLLMSampling {
		// vLLM's bench serve: its sampling flags go into the extra body,
		// which its --extra-body then overrides (as ours does below).
		for _, f := range s.vllmSampling() {
			extra[f.key] = f.value
		}
	}
	if info.ChatTemplateKwargs && s.ChatTemplateKwargs != nil {
		extra["chat_template_kwargs"] = s.ChatTemplateKwargs
	}
	if info.LogprobsCount && s.ReturnLogprob && s.TopLogprobsNum > 0 {
		extra["logprobs"] = s.TopLogprobsNum
	}
	maps.Copy(extra, o.ExtraBody)
	// The run's extra body as bench_serving builds it (--extra-request-body,
	// then --cache-report's and --fake-prefill's keys over it), the one
	// --print-requests shows.
	for _, f := range runExtraFields(s, info) {
		extra[f.Key] = f.Value
	}
	if len(extra) > 0 {
		o.ExtraBody = extra
	}
	return o
}

// WarmupPause is bench_serving's fixed sleep between warm-up (sent or not)
// and the measured run.
const WarmupPause = time.Second

// Output is a finished run.
type Output struct {
	// Summary is the bench_serving summary with servingprobe's extras.
	Summary bench.Summary
	// Run has the run's timing and counts; its Results are not kept (the
	// summary accumulates them as they finish).
	Run prober.BenchmarkRun
	// Duration is the benchmark duration as reported: the run, plus the
	// profiler stop, plus for sglang backends with compat
	// server-info-duration the GET /server_info.
	Duration time.Duration
	// ServerInfo is GET /server_info's JSON, nil if it failed.
	ServerInfo json.RawMessage
	// AcceptLength is sglang's average speculative accept length (0: none).
	AcceptLength float64
	Warmup       []prober.Result
	// Server is what each server metrics endpoint said about the run.
	Server []servermetrics.Report
}

// Run sends warmup, flushes the cache, starts the profiler, runs the
// measured requests and collects server_info, in bench_serving's order.
// A cancelled ctx returns the partial Output with the context's cause.
func (p *Prepared) Run(ctx context.Context, env Env) (_ *Output, err error) {
	if env.Logger == nil {
		env.Logger = log.NewNopLogger()
	}
	defer func() { err = p.Prober.Redactor.RedactError(err) }()
	getenv := env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := p.Spec
	out := &Output{}
	do := p.Prober.Run
	if s.RequestTimeout > 0 {
		do = func(ctx context.Context, prompt datasets.Prompt, scheduled time.Time) prober.Result {
			ctx, cancel := context.WithTimeout(ctx, s.RequestTimeout)
			defer cancel()
			return p.Prober.Run(ctx, prompt, scheduled)
		}
	}
	do = phaseLimits(p.Prompts, do)
	if env.RequestLog != nil {
		// bench_serving prints the lines from its request function, which
		// the warm-up requests go through too.
		rl := bench.NewRequestLog(env.RequestLog, newRequestLogRun(p))
		defer func() {
			if cerr := rl.Close(); cerr != nil && err == nil {
				err = cerr
			}
			if n := rl.Dropped(); n > 0 {
				// On stderr: the output that could not take the lines
				// would not take this one either.
				level.Warn(env.Logger).Log("msg", "--print-requests could not keep up with the requests; lines were dropped", "lines_dropped", n)
			}
		}()
		do = logRequests(rl, do)
	}
	if n := s.WarmupRequests; n > 0 {
		warm := prober.WarmupPrompts(p.Prompts.First(), n)
		for i := range warm {
			// vLLM's warm-up requests carry no request id; the first
			// measured request keeps its own.
			warm[i].RequestID = ""
		}
		if len(s.LoRANames) > 0 {
			for i := range warm {
				warm[i].LoRA = s.LoRANames[0]
			}
		}
		level.Info(env.Logger).Log("msg", "Warming up", "requests", n)
		w, err := prober.Benchmark(ctx, prober.BenchmarkConfig{Warmup: warm, MaxConcurrency: s.MaxConcurrency, Do: do})
		out.Warmup = w.Warmup
		if err != nil {
			return out, fmt.Errorf("warmup: %w", err)
		}
	}
	if s.FlushCache || (p.Info.FlushCacheInCI && envflag.Truthy(getenv("SGLANG_IS_IN_CI")) && (s.Shard == nil || s.Shard.Index == 0)) {
		if err := flushCache(ctx, p.Client, s.BaseURL, s.Backend, s.FlushCacheTimeout, nil); err != nil {
			return out, err
		}
	}
	pause := WarmupPause
	if env.PauseAfterWarmup != nil {
		pause = *env.PauseAfterWarmup
	}
	if pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, context.Cause(ctx)
		}
	}
	if s.Profile.Enabled {
		if err := startProfile(ctx, p.Client, s.BaseURL, s.Profile, env.Logger); err != nil {
			return out, err
		}
	}
	params := s.RunParams()
	params.Planned = p.Prompts.Requests()
	counter := prober.TokenizerCounter{Tokenizer: p.Tok}
	params.CountTokens = func(text string) int {
		// Bounded as a request's own count is: a server's text of tens of
		// MiB is counted from its first MiB.
		n, _, _ := prober.CountOutput(ctx, counter, text)
		return n
	}
	if err := p.syncStart(ctx, env, &params); err != nil {
		return out, err
	}
	acc := bench.NewAccumulator(params)
	runCtx, watch := ctx, p.watch
	pacer := p.Pacer
	if watch != nil {
		// A point of an SLO search ends once its verdict is decided: the
		// watch halts the pacer, or cancels the run with a pointEnded.
		var cancel context.CancelCauseFunc
		runCtx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		watch.begin(cancel)
		pacer = haltPacer{next: pacer, halt: &watch.halt}
	}
	var budget *memoryBudget
	if env.MemoryBudget > 0 {
		budget = newMemoryBudget(env.MemoryBudget, &s)
		var cancel context.CancelCauseFunc
		runCtx, cancel = context.WithCancelCause(runCtx)
		defer cancel(nil)
		budget.stop = func(err error) { cancel(err) }
	}
	measured := do
	var succeeded atomic.Int64
	cfg := prober.BenchmarkConfig{
		Pacer:          pacer,
		Source:         p.Prompts,
		MaxConcurrency: s.MaxConcurrency,
		MaxDuration:    s.MaxDuration,
		Do:             measured,
		Progress:       env.Progress,
		DiscardResults: true,
		OnResult: func(i int, prompt datasets.Prompt, r prober.Result) {
			if budget != nil {
				budget.add(&r)
			}
			acc.Add(i, r, prompt)
			if watch != nil {
				watch.add(&r)
			}
			if r.Outcome == prober.OutcomeSuccess {
				succeeded.Add(1)
			}
			if env.Observer != nil {
				env.Observer.Observe(r)
			}
		},
	}
	byBudget := false
	if !p.deadline.IsZero() {
		if left := time.Until(p.deadline) - budgetMargin; cfg.MaxDuration == 0 || left < cfg.MaxDuration {
			cfg.MaxDuration, byBudget = max(left, time.Millisecond), true
		}
	}
	watches := startServerMetrics(ctx, s, env.ServerMetrics, env.Logger)
	acc.SetStart(time.Now())
	if env.OnStart != nil {
		env.OnStart(s.RequestRate, s.MaxConcurrency)
	}
	level.Info(env.Logger).Log("msg", "Benchmark started", "prompts", p.Prompts.Len(), "request_rate", s.RateLabel(), "max_concurrency", s.MaxConcurrency)
	run, err := prober.Benchmark(runCtx, cfg)
	out.Run = run
	out.Duration = run.Duration
	if cause := context.Cause(runCtx); errors.Is(cause, ErrMemoryBudget) {
		err = cause // the reason, not the bare cancellation
	}
	var decided pointEnded
	if errors.As(err, &decided) && ctx.Err() == nil {
		err = nil // the point ended as its watch decided: a result
	}
	// The end read outlives a cancelled run's context (it is bounded by
	// its own timeout) so that a partial run still gets its block; it
	// waits for the server to count the requests only after a whole run.
	want := int(succeeded.Load())
	if err != nil {
		want = 0
	}
	out.Server = watches.stop(context.WithoutCancel(ctx), want, env.Logger)
	switch {
	case err != nil:
		acc.Stop(bench.StoppedInterrupted)
	case run.HitMaxDuration && byBudget:
		acc.Stop(bench.EndedBudget)
	case run.HitMaxDuration:
		acc.Stop(bench.StoppedMaxDuration)
	case watch != nil && watch.result() != "":
		acc.Stop(watch.result())
	case run.Dispatched < run.Planned && p.Prompts.Requests() > p.Prompts.Len():
		acc.Stop(bench.StoppedConversations)
	}
	if err != nil {
		if serr := summarize(acc, out); serr != nil {
			return out, errors.Join(err, serr)
		}
		return out, err
	}
	if s.Profile.Enabled {
		start := time.Now()
		if err := stopProfile(ctx, p.Client, s.BaseURL, s.Profile, env.Logger); err != nil {
			return out, err
		}
		out.Duration += time.Since(start) // bench_serving stops the clock after the profiler
	}
	start := time.Now()
	out.ServerInfo, out.AcceptLength = serverInfo(ctx, p.Client, s.BaseURL, nil)
	out.ServerInfo = p.Prober.Redactor.RedactJSON(out.ServerInfo) // a server may echo the headers it got
	if p.Info.ServerInfoTimed && s.Compat.ServerInfoDuration {
		out.Duration += time.Since(start)
	}
	if !p.Info.AcceptLength {
		out.AcceptLength = 0 // bench_serving reads it only for sglang backends
	}
	return out, summarize(acc, out)
}

// summarize fills out.Summary. It is also called for a cancelled run, so
// that the daemon can keep a partial summary.
func summarize(acc *bench.Accumulator, out *Output) error {
	sum, err := acc.Summary(out.Duration)
	if err != nil {
		return err
	}
	sum.ServerInfo = out.ServerInfo
	sum.Server = out.Server
	if out.AcceptLength > 0 {
		v := out.AcceptLength
		sum.AcceptLength = &v
	}
	out.Summary = sum
	return nil
}

// checkConversations refuses a dataset of conversations on a backend that
// cannot carry a chat history: sending only the first turn would measure
// another workload than the one asked for.
func checkConversations(s Spec, prompts []datasets.Prompt) error {
	i := slices.IndexFunc(prompts, func(p datasets.Prompt) bool { return p.MultiTurn })
	if i < 0 {
		return nil
	}
	info, err := prober.LookupBackend(s.Backend)
	if err != nil || info.Chat {
		return err
	}
	var chat []string
	for _, name := range prober.BackendNames() {
		if b, _ := prober.LookupBackend(name); b.Chat {
			chat = append(chat, name)
		}
	}
	what := fmt.Sprintf("prompt %d has %d user turns", i, prompts[i].Rounds())
	if s.Dataset == "generated-shared-prefix" {
		what = fmt.Sprintf("--gsp-num-turns %d", prompts[i].Rounds())
	}
	return fmt.Errorf("--dataset-name %s: %s, a multi-turn conversation replayed one request per turn with the real replies, which only a chat backend can carry; --backend %s sends one prompt (use %s)",
		s.Dataset, what, s.Backend, strings.Join(chat, ", "))
}
