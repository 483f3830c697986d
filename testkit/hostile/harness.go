package hostile

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/simulator"
)

// Target is one target of a generated config.
type Target struct {
	Name, URL string
	// Backend defaults to openai-chat, Model to "hostile".
	Backend, Model string
	// DetectModel leaves model out of the config, so that the daemon asks
	// the server's GET /v1/models.
	DetectModel bool
	// Module defaults to "probe"; SimFault names the module that asks the
	// simulator for that fault (see Config).
	Module   string
	SimFault simulator.Fault
	Interval time.Duration
	Timeout  time.Duration
	// MaxResponseBytes and MaxEventBytes default to 1 MiB and 256 KiB:
	// small, so that size faults are cheap to test.
	MaxResponseBytes, MaxEventBytes int64
	// Extra is indented YAML appended to the target (http_client_config).
	Extra string
}

// SimModel is the model the simulator serves (simulator.DefaultConfig).
const SimModel = "servingprobe-sim"

// SimFaultModule is the module name that asks the simulator for fault f.
func SimFaultModule(f simulator.Fault) string { return "sim-" + string(f) }

// Config renders a daemon config for targets. Every module sends a fixed
// eight-token prompt; the sim-<fault> modules add the simulator's fault
// header. extra is appended at the top level (bench:, probe_api:).
func Config(targets []Target, extra string) string {
	return ConfigWithTokenizer(targets, extra, "")
}

// ConfigWithTokenizer is Config with every module's tokenizer set to tok
// (a path; bench runs need one the simulator's model name cannot give).
func ConfigWithTokenizer(targets []Target, extra, tok string) string {
	var b strings.Builder
	b.WriteString("targets:\n")
	dur := func(d, def time.Duration) string {
		if d <= 0 {
			d = def
		}
		// Prometheus durations take no fractions ("1.5s"): milliseconds.
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	for _, t := range targets {
		backend, model, module := t.Backend, t.Model, t.Module
		if backend == "" {
			backend = "openai-chat"
		}
		if model == "" {
			model = "hostile"
		}
		if t.SimFault != "" {
			module = SimFaultModule(t.SimFault)
		}
		if module == "" {
			module = "probe"
		}
		maxResp, maxEvent := t.MaxResponseBytes, t.MaxEventBytes
		if maxResp <= 0 {
			maxResp = 1 << 20
		}
		if maxEvent <= 0 {
			maxEvent = 256 << 10
		}
		modelLine := "    model: " + model + "\n"
		if t.DetectModel {
			modelLine = ""
		}
		fmt.Fprintf(&b, "  - name: %s\n    url: %q\n    backend: %s\n%s    modules: [%s]\n"+
			"    interval: %s\n    timeout: %s\n    max_response_bytes: %d\n    max_event_bytes: %d\n",
			t.Name, t.URL, backend, modelLine, module, dur(t.Interval, time.Second), dur(t.Timeout, 600*time.Millisecond),
			maxResp, maxEvent)
		if t.Extra != "" {
			b.WriteString(t.Extra)
			if !strings.HasSuffix(t.Extra, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	tokLine := ""
	if tok != "" {
		tokLine = fmt.Sprintf("    tokenizer: %q\n", tok)
	}
	b.WriteString("modules:\n  probe:\n    dataset: fixed\n    prompt: \"Say hello to the prober.\"\n    output_len: 8\n" + tokLine)
	for _, f := range simulator.Faults {
		fmt.Fprintf(&b, "  %s:\n    dataset: fixed\n    prompt: \"Say hello to the prober.\"\n    output_len: 8\n"+
			"    headers:\n      X-Servingprobe-Fault: %q\n%s", SimFaultModule(f), f, tokLine)
	}
	b.WriteString(extra)
	return b.String()
}

// StartSimulator serves the simulator on loopback with fast, fixed
// latencies (5 ms TTFT, 1 ms per token); stall faults hold until the client
// goes away.
func StartSimulator() (url string, stop func(), err error) {
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 5*time.Millisecond, 0, time.Millisecond, 0
	cfg.TruthSize = 0
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		return "", nil, err
	}
	srv := httptest.NewServer(sim.Handler())
	return srv.URL, func() { srv.CloseClientConnections(); srv.Close() }, nil
}

// WordTokenizer counts whitespace-separated words: a cheap stand-in for a
// real tokenizer, enough for fixed prompts.
type WordTokenizer struct{}

// Encode returns one id per word.
func (WordTokenizer) Encode(s string, _ bool) ([]int, error) {
	return make([]int, len(strings.Fields(s))), nil
}

// Decode is not supported.
func (WordTokenizer) Decode([]int, bool) (string, error) { return "", errors.New("no decode") }

// NumSpecialTokensToAdd is 0.
func (WordTokenizer) NumSpecialTokensToAdd() int { return 0 }

// VocabSize is 0 (unknown).
func (WordTokenizer) VocabSize() int { return 0 }

// WordTokenizerResolver resolves every tokenizer name to WordTokenizer.
func WordTokenizerResolver(string) (datasets.Tokenizer, error) { return WordTokenizer{}, nil }
