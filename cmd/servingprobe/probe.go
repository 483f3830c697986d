package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// probeArgs is everything `servingprobe probe` needs; runProbe takes it so
// tests (and the lead's probe-vs-simulator test) can call it directly.
type probeArgs struct {
	URL, Backend, Model, Prompt string
	MaxTokens                   int
	Stream, IgnoreEOS, JSON     bool
	IncludeUsage                bool
	Headers                     map[string]string
	Timeout                     time.Duration

	ConfigFile, Target, Module string
	// set records the flags the user gave, which override the module.
	set map[string]*bool

	// APIKey is sent as a Bearer token (from OPENAI_API_KEY), except to
	// backends that bench_serving sends no auth to (trt).
	APIKey string
}

func addProbeCommand(app *kingpin.Application) func(ctx context.Context, env *cliEnv) error {
	cmd := app.Command("probe", "Send one request to an LLM server and print its timings (curl for LLM latency).")
	a := &probeArgs{Headers: map[string]string{}, set: map[string]*bool{}}
	track := func(fc *kingpin.FlagClause) *kingpin.FlagClause {
		b := new(bool)
		a.set[fc.Model().Name] = b
		return fc.IsSetByUser(b)
	}
	cmd.Flag("url", "Base URL of the server, e.g. http://127.0.0.1:8000.").StringVar(&a.URL)
	cmd.Flag("backend", "Wire protocol, as bench_serving's --backend: "+strings.Join(prober.BackendNames(), ", ")+".").Default("openai-chat").StringVar(&a.Backend)
	cmd.Flag("model", "Model to send; empty asks GET /v1/models.").StringVar(&a.Model)
	track(cmd.Flag("prompt", "Prompt text.").Default("Write one sentence about the sky.")).StringVar(&a.Prompt)
	track(cmd.Flag("max-tokens", "Output tokens to request.").Default("64")).IntVar(&a.MaxTokens)
	track(cmd.Flag("stream", "Stream the response.").Default("true")).BoolVar(&a.Stream)
	track(cmd.Flag("ignore-eos", "Ask the server to ignore EOS, so exactly --max-tokens come back.").Default("true")).BoolVar(&a.IgnoreEOS)
	track(cmd.Flag("include-usage", "Ask OpenAI servers for stream_options.include_usage.").Default("true")).BoolVar(&a.IncludeUsage)
	cmd.Flag("header", "Extra request header K=V (repeatable).").StringMapVar(&a.Headers)
	cmd.Flag("json", "Print the Result as JSON.").BoolVar(&a.JSON)
	cmd.Flag("timeout", "Request timeout, body included.").Default("60s").DurationVar(&a.Timeout)
	cmd.Flag("config.file", "Probe a target from this config file instead of --url.").StringVar(&a.ConfigFile)
	cmd.Flag("target", "Target name in --config.file.").StringVar(&a.Target)
	cmd.Flag("module", "Module name in --config.file (default: the target's first).").StringVar(&a.Module)
	return func(ctx context.Context, env *cliEnv) error {
		a.APIKey = os.Getenv("OPENAI_API_KEY")
		res, err := runProbe(ctx, a)
		if err != nil {
			return err
		}
		if a.JSON {
			if err := writeProbeJSON(env.Stdout, res); err != nil {
				return err
			}
		} else {
			writeProbeSummary(env.Stdout, res)
		}
		if res.Outcome != prober.OutcomeSuccess {
			return fmt.Errorf("probe failed: %s: %s", res.Outcome, res.Err)
		}
		return nil
	}
}

// runProbe sends one request as the daemon's probe of the same target
// and module would: both paths go through serve's probe builder, so the
// body, the prompt (the module's dataset), the tokenizer that counts what
// the server does not, and the client are the daemon's. An error means the
// probe could not be attempted; a failed request is a Result.
func runProbe(ctx context.Context, a *probeArgs) (prober.Result, error) {
	t, moduleName, m, err := resolveProbe(a)
	if err != nil {
		return prober.Result{}, err
	}
	info, err := prober.LookupBackend(t.Backend)
	if err != nil {
		return prober.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.EffectiveTimeout())
	defer cancel()
	if t.Model == "" && !info.NoModelList {
		// Detect on a client of its own, so that the probe's request
		// opens its own connection and its connect time is measured.
		c, err := prober.NewClient(&t, prober.ClientOptions{Concurrency: 1, UserAgent: "servingprobe"})
		if err != nil {
			return prober.Result{}, err
		}
		red := config.NewRedactor(&config.Config{Targets: []config.Target{t}, Modules: map[string]config.Module{moduleName: m}})
		t.Model, err = prober.DetectModelWithHeaders(ctx, c, t.URL, m.Headers, red)
		c.CloseIdleConnections()
		var several *prober.SeveralModelsError
		if errors.As(err, &several) {
			fmt.Fprintln(os.Stderr, "servingprobe probe:", strings.Replace(several.Error(), "set the model", "set --model", 1))
		} else if err != nil {
			return prober.Result{}, err
		}
	}
	pf, err := daemonProbeBuilder()(t, moduleName, m)
	if err != nil {
		return prober.Result{}, fmt.Errorf("target %q module %q: %w", t.Name, moduleName, err)
	}
	return pf(ctx, log.NewNopLogger()), nil
}

// resolveProbe turns flags, or a config target and module, into a target
// and module. Flags the user gave override the module (--max-tokens used
// to be silently replaced by its output_len).
func resolveProbe(a *probeArgs) (config.Target, string, config.Module, error) {
	var (
		t          config.Target
		m          config.Module
		moduleName string
	)
	if a.ConfigFile == "" {
		if a.URL == "" {
			return t, "", m, errors.New("--url or --config.file is required")
		}
		normalize := prober.NormalizeBaseURL
		if info, err := prober.LookupBackend(a.Backend); err == nil {
			normalize = info.BaseURL // ollama's /api is its root, as /v1 is
		}
		u, err := normalize(a.URL)
		if err != nil {
			return t, "", m, fmt.Errorf("--url %w", err)
		}
		t = config.DefaultTarget
		t.Name, t.URL, t.Backend, t.Model = "cli", u, a.Backend, a.Model
		t.Timeout = model.Duration(a.Timeout)
		t.HTTPClientConfig.EnableHTTP2 = true
		moduleName = "cli"
		m = config.DefaultModule
		m.Dataset, m.Prompt, m.OutputLen = "fixed", a.Prompt, a.MaxTokens
		m.Stream, m.IgnoreEOS, m.IncludeUsage = &a.Stream, &a.IgnoreEOS, &a.IncludeUsage
	} else {
		cfg, err := prober.ConfigChecks.Load(a.ConfigFile)
		if err != nil {
			return t, "", m, err
		}
		i := slices.IndexFunc(cfg.Targets, func(t config.Target) bool { return t.Name == a.Target })
		if i < 0 {
			return t, "", m, fmt.Errorf("target %q not in %s", a.Target, a.ConfigFile)
		}
		t = cfg.Targets[i]
		moduleName = a.Module
		if moduleName == "" && len(t.Modules) > 0 {
			moduleName = t.Modules[0]
		}
		var ok bool
		if m, ok = cfg.Modules[moduleName]; !ok {
			return t, "", m, fmt.Errorf("module %q not in %s", moduleName, a.ConfigFile)
		}
		given := func(flag string) bool { p := a.set[flag]; return p != nil && *p }
		if given("max-tokens") {
			m.OutputLen = a.MaxTokens
		}
		if given("prompt") {
			m.Dataset, m.Prompt = "fixed", a.Prompt
		}
		for flag, dst := range map[string]**bool{"stream": &m.Stream, "ignore-eos": &m.IgnoreEOS, "include-usage": &m.IncludeUsage} {
			if given(flag) {
				v := map[string]bool{"stream": a.Stream, "ignore-eos": a.IgnoreEOS, "include-usage": a.IncludeUsage}[flag]
				*dst = &v
			}
		}
	}
	if len(a.Headers) > 0 {
		m.Headers = maps.Clone(m.Headers)
		if m.Headers == nil {
			m.Headers = map[string]string{}
		}
		maps.Copy(m.Headers, a.Headers)
	}
	// OPENAI_API_KEY, as the target's credentials (so it is redacted as
	// one), unless the target has its own or the backend takes none.
	if info, err := prober.LookupBackend(t.Backend); err == nil && a.APIKey != "" && !info.NoAuth {
		hc := &t.HTTPClientConfig
		if hc.Authorization == nil && hc.BasicAuth == nil && hc.BearerToken == "" && hc.OAuth2 == nil {
			if _, ok := m.Headers["Authorization"]; !ok {
				hc.Authorization = &promconfig.Authorization{Type: "Bearer", Credentials: promconfig.Secret(a.APIKey)}
				if info.APIKeyHeader != "" {
					// The same key, where the protocol's own servers look
					// for it, kept secret as the bearer token is.
					hc.HTTPHeaders = &promconfig.Headers{Headers: map[string]promconfig.Header{
						info.APIKeyHeader: {Secrets: []promconfig.Secret{promconfig.Secret(a.APIKey)}},
					}}
				}
			}
		}
	}
	return t, moduleName, m, nil
}

// probeJSON is a Result with its samples in seconds
// (prober.Result.SampleSeconds, the histograms' and the history's view);
// a sample that is not defined for the request is null.
type probeJSON struct {
	prober.Result
	TTFTSeconds      *float64  `json:"ttft_seconds"`
	TPOTSeconds      *float64  `json:"tpot_seconds"`
	E2ESeconds       *float64  `json:"e2e_seconds"`
	ITLSeconds       []float64 `json:"itl_seconds"`
	ChunkITLSeconds  []float64 `json:"chunk_itl_seconds"`
	EventTokensTotal int       `json:"event_tokens_total"`
	// The answer phase, only for a request that reasoned (see
	// prober.Samples): the time to the first answer token, the answer's
	// TPOT, its per-token inter-token latencies (the gaps from the first
	// answer token on, prober.Result.AnswerITLGaps) and its token count.
	// Other requests print as before.
	TTFATSeconds      *float64   `json:"ttfat_seconds,omitempty"`
	AnswerTPOTSeconds *float64   `json:"answer_tpot_seconds,omitempty"`
	AnswerITLSeconds  *[]float64 `json:"answer_itl_seconds,omitempty"`
	AnswerTokens      *int       `json:"answer_tokens,omitempty"`
	// The server's own TTFT as it stated it and TTFT minus it
	// (prober.Samples' split), only where the server stated one.
	ServerTTFTSeconds        *float64 `json:"server_ttft_seconds,omitempty"`
	OutsideServerTTFTSeconds *float64 `json:"outside_server_ttft_seconds,omitempty"`
}

func optSeconds(v float64) *float64 {
	if v < 0 {
		return nil
	}
	return &v
}

func writeProbeJSON(w io.Writer, r prober.Result) error {
	sm := r.SampleSeconds()
	out := probeJSON{
		Result: r, TTFTSeconds: optSeconds(sm.TTFT), E2ESeconds: optSeconds(sm.E2E), TPOTSeconds: optSeconds(sm.TPOT),
		ITLSeconds: sm.ITL.PerToken(), ChunkITLSeconds: r.AppendITLs([]float64{}, true),
		ServerTTFTSeconds: optSeconds(sm.ServerTTFT), OutsideServerTTFTSeconds: optSeconds(sm.OutsideServerTTFT),
	}
	for _, e := range r.Events {
		out.EventTokensTotal += e.Tokens
	}
	if sm.Reasoning {
		out.TTFATSeconds, out.AnswerTokens, out.AnswerTPOTSeconds = optSeconds(sm.TTFAT), &sm.AnswerTokens, optSeconds(sm.AnswerTPOT)
		answerITL := sm.AnswerITL.PerToken()
		out.AnswerITLSeconds = &answerITL
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// probeMS prints a sample in ms, or "–" where it is not defined.
func probeMS(d time.Duration) string {
	if !prober.Defined(d) {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func writeProbeSummary(w io.Writer, r prober.Result) {
	sm := r.Samples()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	row("Target", "%s (%s, model %s)", r.Target, r.Backend, orNone(r.Model))
	row("Outcome", "%s (HTTP %d)", r.Outcome, r.HTTPStatus)
	if r.TraceID != "" {
		row("Trace id", "%s", r.TraceID)
	}
	if r.Err != "" {
		row("Error", "%s", r.Err)
	}
	info, err := prober.LookupBackend(r.Backend)
	embedding := err == nil && info.Embedding
	switch {
	case embedding:
		// An embedding generates no tokens: E2E and the input count are
		// all there is to measure, and there is no output to ask for.
	case !r.Stream && r.Outcome == prober.OutcomeSuccess:
		// The response arrived whole: its first token is its end, so only
		// E2E is a measurement.
		const notStreamed = "not measured: the response was not streamed (only E2E is)"
		row("TTFT", "%s", notStreamed)
		row("TPOT", "%s", notStreamed)
		row("ITL", "%s", notStreamed)
	default:
		row("TTFT", "%s", probeMS(sm.TTFT))
		if prober.Defined(sm.ServerTTFT) {
			row("  server's TTFT", "%s (as the server states it)", probeMS(sm.ServerTTFT))
			row("  outside the server", "%s", probeMS(sm.OutsideServerTTFT))
		}
		tpot := "–"
		if sm.TPOTSeconds >= 0 {
			tpot = fmt.Sprintf("%.2f ms", sm.TPOTSeconds*1000)
		}
		row("TPOT", "%s", tpot)
		itlText := func(v []float64) string {
			if len(v) == 0 {
				return "–"
			}
			st := bench.ComputeStats(v)
			return fmt.Sprintf("p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%d)", st.Median, st.P99, st.Max, len(v))
		}
		row("ITL per token", "%s, tokens per event from %s", itlText(r.AppendITLs(nil, false)), orNone(string(sm.EventTokensSource)))
		row("ITL per chunk", "%s", itlText(r.AppendITLs(nil, true)))
		if sm.Reasoning {
			// The user waits for the answer, not the first thought.
			row("First answer token", "%s (after %s of reasoning)", probeMS(sm.TTFAT), reasoningSpan(sm))
			atpot := "–"
			if sm.AnswerTPOTSeconds >= 0 {
				atpot = fmt.Sprintf("%.2f ms", sm.AnswerTPOTSeconds*1000)
			}
			row("Answer TPOT", "%s", atpot)
			// The gaps between the answer's tokens, without the thinking's.
			row("Answer ITL per token", "%s", itlText(r.AppendAnswerITLs(nil, false)))
		}
	}
	row("E2E", "%s", probeMS(sm.E2E))
	if r.CachedTokens > 0 {
		// The server's prompt cache served part of the input; the input
		// count includes it (Anthropic's usage states it apart).
		row("Tokens in", "%d (%s), %d of them from the server's prompt cache", sm.InputTokens, orNone(string(sm.InputTokensSource)), r.CachedTokens)
	} else {
		row("Tokens in", "%d (%s)", sm.InputTokens, orNone(string(sm.InputTokensSource)))
	}
	if !embedding {
		row("Tokens out", "%d (%s), requested %d", sm.OutputTokens, orNone(string(sm.OutputTokensSource)), r.RequestedOutputTokens)
	}
	if sm.Reasoning {
		row("Tokens reasoning", "%d (%s), answer %d", sm.ReasoningTokens, reasoningSourceText(sm.ReasoningTokensSource), sm.AnswerTokens)
	}
	row("Finish reason", "%s", orNone(r.FinishReason))
	if r.Server.Stated() {
		// The server's own account (ollama's final object), beside ours.
		row("Server timings", "%s", exporter.ServerTimingsText(r.Server))
	}
	switch {
	case r.Trace.ConnReused:
		row("Connection", "reused (no DNS, connect or TLS)")
	case r.ConnRetries > 0:
		// The server closed the kept-alive connection under the request
		// before answering; the request went again on this one.
		row("Connection", "new, after a reused one closed before answering (sent again; --compat new-connection avoids reuse): DNS %s, connect %s, TLS %s",
			probeMS(r.Trace.DNS()), probeMS(r.Trace.Connect()), probeMS(r.Trace.TLS()))
	default:
		row("Connection", "new: DNS %s, connect %s, TLS %s", probeMS(r.Trace.DNS()), probeMS(r.Trace.Connect()), probeMS(r.Trace.TLS()))
	}
	if !r.Trace.FirstResponseByte.IsZero() {
		row("Headers", "%s after sent", probeMS(r.Trace.FirstResponseByte.Sub(r.Sent)))
	}
	row("Events", "%d output events, %d keep-alives, %d bytes", len(r.Events), r.KeepAlives, r.BytesRead)
	if r.Clock != "" {
		row("Timestamps", "%s", clockText(r.Clock, r.Trace.ConnReused))
	}
	tw.Flush()
}

// reasoningSpan is TTFAT − TTFT: how long the request reasoned before
// its answer began, "–" when either is undefined.
func reasoningSpan(sm prober.Samples) string {
	if !prober.Defined(sm.TTFAT) || !prober.Defined(sm.TTFT) {
		return "–"
	}
	return probeMS(sm.TTFAT - sm.TTFT)
}

// reasoningSourceText says where a reasoning count came from.
func reasoningSourceText(src prober.TokenSource) string {
	if src == prober.TokenSourceCounted {
		return "counted: the server stated none"
	}
	return "stated by the server: " + string(src)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// clockText says what stamped a probe's times, and where its start was
// taken: on a reused connection the kernel's transmit time of the
// request's write, on a new one the HTTP call, so that TTFT keeps the
// connection setup (prober's requestConn).
func clockText(c prober.Clock, reused bool) string {
	switch {
	case c == prober.ClockKernel && reused:
		return "kernel receive times (start: the request's write on the reused connection)"
	case c == prober.ClockKernel:
		return "kernel receive times (start: the HTTP call, before its connection was dialled)"
	case c == prober.ClockMixed:
		return "kernel receive times where the kernel gave them, else the process's clock"
	}
	return "the process's clock when each read returned"
}
