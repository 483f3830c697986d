package prober

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/config"
)

// TestBackendTraits pins each trait field to the rule its callers applied
// to backend names before the traits were fields, so that moving a caller
// from the name to the field changes nothing.
func TestBackendTraits(t *testing.T) {
	for _, name := range BackendNames() {
		b, err := LookupBackend(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := name == "sglang" || name == "sglang-native"; b.SplitChunkGaps != want {
			t.Errorf("%s: SplitChunkGaps = %v, want %v", name, b.SplitChunkGaps, want)
		}
		if want := b.Protocol == ProtocolOpenAIChat || b.Protocol == ProtocolSGLangGenerate || name == "sglang-oai"; b.Images != want {
			t.Errorf("%s: Images = %v, want %v", name, b.Images, want)
		}
		if want := name == "sglang"; b.InputIDs != want {
			t.Errorf("%s: InputIDs = %v, want %v", name, b.InputIDs, want)
		}
		if want := strings.Contains(name, "embedding"); b.Embedding != want {
			t.Errorf("%s: Embedding = %v, want %v", name, b.Embedding, want)
		}
		wantReady := "http://h:1/v1/models"
		if name == "trt" {
			wantReady = "http://h:1"
		}
		if got := b.ReadyURL("http://h:1"); got != wantReady {
			t.Errorf("%s: ReadyURL = %q, want %q", name, got, wantReady)
		}
		var wantFlush string
		switch {
		case strings.HasPrefix(name, "vllm"):
			wantFlush = "http://h:1/reset_prefix_cache"
		case strings.Contains(name, "sglang"):
			wantFlush = "http://h:1/flush_cache?timeout=2.5"
		default:
			wantFlush = "http://h:1/flush_cache"
		}
		if got := b.FlushCacheURL("http://h:1", 2500*time.Millisecond); got != wantFlush {
			t.Errorf("%s: FlushCacheURL = %q, want %q", name, got, wantFlush)
		}
		sglang := strings.Contains(name, "sglang")
		chat, completions, generate := b.Protocol == ProtocolOpenAIChat, b.Protocol == ProtocolOpenAICompletions, b.Protocol == ProtocolSGLangGenerate
		for _, tr := range []struct {
			trait     string
			got, want bool
		}{
			{"FlushCacheInCI", b.FlushCacheInCI, sglang},
			{"AcceptLength", b.AcceptLength, sglang},
			{"ServerInfoTimed", b.ServerInfoTimed, sglang},
			{"CacheReportDetails", b.CacheReportDetails, sglang && !generate},
			{"SamplingFlags", b.SamplingFlags, generate || chat || completions},
			{"VLLMSampling", b.VLLMSampling, chat || completions},
			{"ChatTemplateKwargs", b.ChatTemplateKwargs, chat},
			{"LogprobFields", b.LogprobFields, generate},
			{"LogprobsCount", b.LogprobsCount, completions},
			{"TextChunks", b.TextChunks, chat || completions},
			{"ReadsSpecAccept(stream)", b.ReadsSpecAccept(true), generate},
			{"ReadsSpecAccept(no stream)", b.ReadsSpecAccept(false), generate || chat},
			{"NoModelList", b.NoModelList, b.Protocol == ProtocolTRT},
		} {
			if tr.got != tr.want {
				t.Errorf("%s: %s = %v, want %v", name, tr.trait, tr.got, tr.want)
			}
		}
		wantFraming := Framing{EOFEnds: b.Protocol == ProtocolTRT, NDJSON: b.Protocol == ProtocolOllama, Raw: b.Protocol == ProtocolTruss,
			NoOutput: b.Embedding}
		if got := b.New().framing(); got != wantFraming {
			t.Errorf("%s: framing = %+v, want %+v", name, got, wantFraming)
		}
	}
}

// TestUnsupportedBackend: a name bench_serving lists that we refuse is
// refused with why, and is in no list of accepted names.
func TestUnsupportedBackend(t *testing.T) {
	_, err := LookupBackend("gserver")
	if ue, ok := errors.AsType[*UnsupportedBackendError](err); !ok || !strings.Contains(ue.Why, "NotImplementedError") {
		t.Errorf("LookupBackend(gserver) = %v, want an UnsupportedBackendError naming NotImplementedError", err)
	}
	if slices.Contains(BackendNames(), "gserver") {
		t.Errorf("BackendNames() = %v, want no gserver", BackendNames())
	}
	if _, ok := DefaultPort("gserver"); ok {
		t.Error("DefaultPort(gserver) found, want not")
	}
	if _, err := NewBackend("gserver"); err == nil {
		t.Error("NewBackend(gserver) succeeded, want an error")
	}
}

func TestCheckBackend(t *testing.T) {
	for _, name := range BackendNames() {
		if err := CheckBackend(name); err != nil {
			t.Errorf("CheckBackend(%q) = %v, want nil", name, err)
		}
	}
	for name, want := range map[string]string{
		"tgi":     `unknown backend "tgi" (one of ` + strings.Join(BackendNames(), ", ") + `)`,
		"gserver": `backend gserver is not supported: NotImplementedError (bench_serving's gserver request function raises it; there is no gserver client)`,
	} {
		if err := CheckBackend(name); err == nil || err.Error() != want {
			t.Errorf("CheckBackend(%q) = %v, want %q", name, err, want)
		}
	}
}

// TestConfigChecks: a config loaded for probes names an unknown or
// unsupported backend at its place among the file's other problems, all
// reported at once.
func TestConfigChecks(t *testing.T) {
	_, err := ConfigChecks.Parse([]byte(`
targets:
  - {name: a, url: "http://127.0.0.1:1", backend: vllm, modules: [m]}
  - {name: b, url: "ftp://127.0.0.1:1", backend: tgi, modules: [m]}
  - {name: c, url: "http://127.0.0.1:1", backend: gserver, modules: [m, x]}
modules:
  m: {dataset: fixed, prompt: hello}
`))
	want := []string{
		`line 4: targets[1].url: scheme must be http or https, got "ftp"`,
		`line 4: targets[1].backend: unknown backend "tgi" (one of ` + strings.Join(BackendNames(), ", ") + `)`,
		`line 5: targets[2].backend: backend gserver is not supported: NotImplementedError (bench_serving's gserver request function raises it; there is no gserver client)`,
		`line 5: targets[2].modules[1]: unknown module "x"`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if !slices.Equal(got, want) {
		t.Errorf("ConfigChecks.Parse:\n got %q\nwant %q", got, want)
	}
	// config's own Parse makes no backend check: the list is the prober's.
	if _, err := config.Parse([]byte("targets: [{name: a, url: \"http://h:1\", backend: tgi, modules: [m]}]\nmodules: {m: {dataset: fixed, prompt: hi}}\n")); err != nil {
		t.Errorf("config.Parse with an unknown backend: %v, want nil (not config's to check)", err)
	}
}
