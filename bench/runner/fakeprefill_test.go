package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestFakePrefillBodies: --fake-prefill puts sglang's fake bootstrap fields
// at the top level of every backend's request body, over an
// --extra-request-body's values for them, and sends no bootstrap_port, as
// bench_serving's run_benchmark sets extra_request_body["bootstrap_host"]
// = FAKE_BOOTSTRAP_HOST and ["bootstrap_room"] = 0 after loading the
// user's JSON (sglang python/sglang/benchmark/serving.py at 00f9ec47).
func TestFakePrefillBodies(t *testing.T) {
	for _, tc := range []struct {
		backend  string
		extra    map[string]any
		wantHost any
		wantRoom any
	}{
		{"sglang", nil, FakeBootstrapHost, 0.0},
		{"sglang-oai", nil, FakeBootstrapHost, 0.0},
		{"sglang-oai-chat", nil, FakeBootstrapHost, 0.0},
		{"sglang", map[string]any{"bootstrap_room": 7, "bootstrap_host": "10.0.0.1"}, FakeBootstrapHost, 0.0},
		{"vllm", nil, FakeBootstrapHost, 0.0},
		{"vllm-chat", map[string]any{"bootstrap_room": 7}, FakeBootstrapHost, 0.0},
		{"lmdeploy", nil, FakeBootstrapHost, 0.0},
		{"trt", nil, FakeBootstrapHost, 0.0},
		{"truss", nil, FakeBootstrapHost, 0.0},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.backend, tc.extra), func(t *testing.T) {
			s := DefaultSpec()
			s.Backend, s.BaseURL, s.FakePrefill, s.ExtraBody = tc.backend, "http://s", true, tc.extra
			b, body := requestBody(t, s)
			if body["bootstrap_host"] != tc.wantHost || body["bootstrap_room"] != tc.wantRoom {
				t.Errorf("body %s: bootstrap_host %v, bootstrap_room %v; want %v, %v", b, body["bootstrap_host"], body["bootstrap_room"], tc.wantHost, tc.wantRoom)
			}
			if _, ok := body["bootstrap_port"]; ok {
				t.Errorf("body %s has a bootstrap_port; bench_serving sends none", b)
			}
		})
	}
}

// TestFakePrefillOff: without --fake-prefill no body has the fields.
func TestFakePrefillOff(t *testing.T) {
	for _, backend := range []string{"sglang", "sglang-oai-chat", "vllm"} {
		info, err := prober.LookupBackend(backend)
		if err != nil {
			t.Fatal(err)
		}
		s := DefaultSpec()
		s.Backend, s.BaseURL = backend, "http://s"
		if o := requestOptions(s, info, "m"); o.ExtraBody["bootstrap_host"] != nil || o.ExtraBody["bootstrap_room"] != nil {
			t.Errorf("%s: extra body %v without --fake-prefill", backend, o.ExtraBody)
		}
	}
}

// TestCacheReportBodyWins: --cache-report's return_cached_tokens_details
// is set after the user's --extra-request-body is loaded, as
// bench_serving sets it in the parsed extra_request_body, so a user's
// false does not turn the report off; sglang's native /generate route
// is not asked (its meta_info carries the counts).
func TestCacheReportBodyWins(t *testing.T) {
	for _, tc := range []struct {
		backend string
		extra   map[string]any
		want    any
	}{
		{"sglang-oai-chat", nil, true},
		{"sglang-oai", map[string]any{"return_cached_tokens_details": false}, true},
		{"sglang", nil, nil},
		{"vllm-chat", nil, nil},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.backend, tc.extra), func(t *testing.T) {
			s := DefaultSpec()
			s.Backend, s.BaseURL, s.CacheReport, s.ExtraBody = tc.backend, "http://s", true, tc.extra
			b, body := requestBody(t, s)
			if body["return_cached_tokens_details"] != tc.want {
				t.Errorf("body %s: return_cached_tokens_details %v, want %v", b, body["return_cached_tokens_details"], tc.want)
			}
		})
	}
}

// requestBody is the body of the request s makes for a one-word prompt,
// raw and decoded.
func requestBody(t *testing.T, s Spec) ([]byte, map[string]any) {
	t.Helper()
	info, err := prober.LookupBackend(s.Backend)
	if err != nil {
		t.Fatal(err)
	}
	be, err := prober.NewBackend(s.Backend)
	if err != nil {
		t.Fatal(err)
	}
	req, err := be.NewRequest(requestOptions(s, info, "m"), datasets.Prompt{Text: "hi", PromptLen: 1, OutputLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(req.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return b, body
}
