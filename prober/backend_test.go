package prober

import (
	"strings"
	"testing"
	"time"
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
		if b.SGLang != strings.Contains(name, "sglang") {
			t.Errorf("%s: SGLang = %v", name, b.SGLang)
		}
		wantFraming := Framing{EOFEnds: b.Protocol == ProtocolTRT, NDJSON: b.Protocol == ProtocolOllama, Raw: b.Protocol == ProtocolTruss,
			NoOutput: b.Embedding}
		if got := framingOf(b.New()); got != wantFraming {
			t.Errorf("%s: framing = %+v, want %+v", name, got, wantFraming)
		}
	}
}
