package prober

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// ProbeBuilderOptions configure NewProbeBuilder.
type ProbeBuilderOptions struct {
	// Tokenizer resolves a module's tokenizer setting; "" is the default.
	Tokenizer func(name string) (datasets.Tokenizer, error)
	// UserAgent is sent with every probe.
	UserAgent string
	// PromptPool is how many prompts a module prepares once; probes cycle
	// through them. Default 16 (1 for the fixed dataset).
	PromptPool int
}

// ProbeBuilder builds the probe of one (target, module). The daemon calls
// it when a config is loaded, so that a target that cannot be built (an
// unknown backend, a missing dataset file) fails the load, not every probe.
type ProbeBuilder func(t config.Target, moduleName string, m config.Module) (ProbeFunc, error)

// requestIDHeader carries our request id, so that a slow exemplar can be
// found in the server's logs (vLLM and sglang honour it).
const requestIDHeader = "X-Request-Id"

// NewProbeBuilder returns the ProbeBuilder of the daemon: each probe sends
// one prompt of the module's dataset with Prober.Run.
//
// What a probe sends comes from ModuleOptions and what it draws from
// ModuleDataset, the two mappings a bench window of the module
// (runner.ModuleSpec) starts from too, so that a window measures what
// the module probes. The builder lives here, beside them, so that the
// daemon's path from a config to a probe is config, prober, exporter: no
// bench engine in between.
func NewProbeBuilder(o ProbeBuilderOptions) ProbeBuilder {
	if o.PromptPool <= 0 {
		o.PromptPool = 16
	}
	return func(t config.Target, moduleName string, m config.Module) (ProbeFunc, error) {
		return buildProbe(o, t, moduleName, m)
	}
}

func buildProbe(o ProbeBuilderOptions, t config.Target, moduleName string, m config.Module) (ProbeFunc, error) {
	info, err := LookupBackend(t.Backend)
	if err != nil {
		return nil, err
	}
	client, err := NewClient(&t, ClientOptions{Concurrency: max(t.MaxInFlight, 1), UserAgent: o.UserAgent})
	if err != nil {
		return nil, err
	}
	if o.Tokenizer == nil {
		return nil, errors.New("no tokenizer resolver")
	}
	tok, err := o.Tokenizer(m.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	// The module's dataset, as a bench window of the module draws it.
	name, opts := ModuleDataset(m)
	ds, err := datasets.New(name, opts, tok)
	if err != nil {
		return nil, err
	}
	n := o.PromptPool
	if m.Dataset == "fixed" {
		n = 1
	}
	if m.ConversationTurns() > 0 && !info.Chat {
		// A conversation resends its history as chat messages; a
		// completions or generate request would send the last user
		// message alone, and its turns would all be cold.
		return nil, fmt.Errorf("dataset conversation needs a chat backend (backend %s sends no message history)", t.Backend)
	}
	prompts, err := ds.Generate(n, mrand.New(mrand.NewPCG(uint64(m.Seed), 0)))
	if err != nil {
		return nil, fmt.Errorf("generate prompts: %w", err)
	}
	if len(prompts) == 0 {
		return nil, errors.New("dataset produced no prompt")
	}
	for i := range prompts {
		if m.LoRA != "" && prompts[i].LoRA == "" {
			prompts[i].LoRA = m.LoRA
		}
	}
	checks, err := ModuleChecker(info, m)
	if err != nil {
		return nil, err
	}
	base := Prober{
		Checks:  checks,
		Client:  client,
		Backend: info.New(),
		Name:    t.Backend,
		Options: ModuleOptions(t, m),
		Limits:  Limits{MaxEventBytes: t.MaxEventBytes, MaxResponseBytes: t.MaxResponseBytes},
		Counter: TokenizerCounter{Tokenizer: tok},
		Target:  t.Name,
		Module:  moduleName,
	}
	// A server may echo the credentials it was sent in an error body or an
	// in-stream error; the error text goes to logs, the history and
	// /probe?debug, so Run redacts it, at the source.
	red := config.NewRedactor(&config.Config{Targets: []config.Target{t}, Modules: map[string]config.Module{moduleName: m}})
	base.Redactor = red
	var (
		next     atomic.Uint64
		detectMu sync.Mutex
		detected string
	)
	return func(ctx context.Context, logger log.Logger) Result {
		p := base
		id := newRequestID()
		p.Options.Headers = maps.Clone(base.Options.Headers)
		if p.Options.Headers == nil {
			p.Options.Headers = map[string]string{}
		}
		p.Options.Headers[requestIDHeader] = id
		if t.Model == "" {
			detectMu.Lock()
			if detected == "" {
				m, err := DetectModelWithHeaders(ctx, client, t.URL, nil, red)
				var several *SeveralModelsError
				if errors.As(err, &several) {
					// Once per detection, at info: the target's series
					// carry this model until the server changes.
					level.Info(logger).Log("msg", "Model detected", "model", m, "why", strings.Replace(several.Error(), "set the model", "set the target's model", 1))
					err = nil
				}
				if err != nil {
					// Send anyway: the request's own failure is classified
					// (connect_error for a server that is down).
					level.Debug(logger).Log("msg", "Model detection failed", "err", err)
				} else {
					detected = m
					level.Debug(logger).Log("msg", "Model detected", "model", m)
				}
			}
			p.Options.Model = detected
			detectMu.Unlock()
		}
		prompt := prompts[(next.Add(1)-1)%uint64(len(prompts))]
		var r Result
		if m.SessionHeader != "" {
			p.Options.Headers[m.SessionHeader] = newSessionID()
		}
		if prompt.MultiTurn {
			r = runConversation(ctx, p, prompt, logger)
		} else {
			if m.CacheBust {
				prompt = withFreshPrefix(prompt)
			}
			r = p.Run(ctx, prompt, time.Time{})
			r.RequestID = id
			logProbeResult(logger, r)
		}
		if t.Model == "" && r.Outcome != OutcomeSuccess {
			// The server may have restarted with another model.
			detectMu.Lock()
			detected = ""
			detectMu.Unlock()
		}
		return r
	}, nil
}

// logProbeResult writes the probe's one debug line: what was asked, what
// came back, and the samples (Result.Samples, as every surface).
func logProbeResult(logger log.Logger, r Result) {
	sm := r.Samples()
	sec := func(d time.Duration) float64 {
		if !Defined(d) {
			return -1
		}
		return d.Seconds()
	}
	tr := r.Trace
	kv := []any{"msg", "Probe result", "request_id", r.RequestID, "backend", r.Backend, "model", r.Model,
		"outcome", r.Outcome, "http_status", r.HTTPStatus,
		"input_tokens", sm.InputTokens, "input_token_source", sm.InputTokensSource,
		"output_tokens", sm.OutputTokens, "output_tokens_requested", r.RequestedOutputTokens, "token_source", sm.OutputTokensSource,
		"events", len(r.Events), "finish_reason", r.FinishReason,
		"conn_reused", tr.ConnReused, "connect_seconds", tr.Connect().Seconds(), "tls_seconds", tr.TLS().Seconds(),
		"ttft_seconds", sec(sm.TTFT), "tpot_seconds", sm.TPOTSeconds, "e2e_seconds", sec(sm.E2E)}
	if r.Err != "" {
		kv = append(kv, "err", r.Err)
	}
	// A failed probe is data: it is counted and kept in the history; its
	// line goes out at the probe log level like every other probe line.
	level.Debug(logger).Log(kv...)
}

// newRequestID returns a random id that is safe as an exemplar label value
// and an HTTP header.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "sp-" + hex.EncodeToString(b[:])
}
