package prober

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeCacheDetails: sglang's sglext.cached_tokens_details on its
// OpenAI routes and meta_info.cached_tokens_details on /generate (the
// fields sgl-project/sglang python/sglang/benchmark/serving.py reads under
// --cache-report) reach the Delta; the fast scanners fall back to the
// reference decoders for them, and a null sglext stays on the fast path.
func TestDecodeCacheDetails(t *testing.T) {
	want := &CacheDetails{Device: 5, Host: 3, Storage: 2, StorageBackend: "mooncake", FromSGLExt: true}
	for _, tc := range []struct {
		name string
		be   Backend
		data string
		want *CacheDetails
	}{
		{"chat", openAIChat{}, `{"choices":[{"index":0,"delta":{"content":"a"}}],"sglext":{"cached_tokens_details":{"device":5,"host":3,"storage":2,"storage_backend":"mooncake"}}}`, want},
		{"completions", openAICompletions{}, `{"choices":[{"index":0,"text":"a"}],"sglext":{"cached_tokens_details":{"device":5,"host":3,"storage":2,"storage_backend":"mooncake"}}}`, want},
		{"chat null sglext", openAIChat{}, `{"choices":[{"index":0,"delta":{"content":"a"}}],"sglext":null}`, nil},
		{"generate", sglangGenerate{}, `{"text":"a","meta_info":{"prompt_tokens":10,"completion_tokens":1,"cached_tokens":8,"cached_tokens_details":{"device":8,"host":null}}}`, &CacheDetails{Device: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.be.Decode(SSEEvent{Data: []byte(tc.data)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, d.CacheDetails); diff != "" {
				t.Errorf("Decode(%s) details (-want +got):\n%s", tc.data, diff)
			}
		})
	}
	res := &Result{CachedTokens: 1}
	applyCacheDetails(res, want)
	if res.CachedTokens != 10 {
		t.Errorf("cached tokens from sglext %d, want device+host+storage 10", res.CachedTokens)
	}
}
