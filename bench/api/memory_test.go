package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestBenchAPIMemoryBound: a window within every count limit can still
// ask for more memory than the daemon should give it: 10,000 prompts of
// 131,072 tokens are gigabytes of text, each image prompt held its 1080p
// image too, and 10,000 outputs of 131,072 tokens keep gigabytes of
// per-token samples. Such a window is refused with a 422 naming the
// bound and the fields to lower; a window that fits is accepted.
func TestBenchAPIMemoryBound(t *testing.T) {
	cfg := strings.ReplaceAll(strings.ReplaceAll(benchConfigTmpl, "RESULTS", t.TempDir()), "max_prompts: 100", "max_prompts: 10000")
	cfg = strings.ReplaceAll(cfg, "max_body_bytes: 512", "max_body_bytes: 4096")
	cfg = strings.Replace(cfg, "backend: vllm\n", "backend: vllm-chat\n", 1) // target a carries images
	fr := newFakeRunner()
	e := startBenchDaemonWith(t, cfg, "", fr.run)
	e.runner = fr
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"image, long texts", `{"target":"a","dataset_name":"image","num_prompts":10000,"random_input_len":131072}`, 422,
			"more than a window may hold (1024 MiB)"},
		{"random, long texts", `{"target":"b","dataset_name":"random","num_prompts":10000,"random_input_len":131072}`, 422,
			"more than a window may hold (1024 MiB)"},
		// Tiny prompts, huge outputs: what the record keeps of each
		// output token (about 61 GiB here) was not counted, and such a
		// window was accepted and grew until the daemon died.
		{"random, long outputs", `{"target":"b","dataset_name":"random","num_prompts":10000,"random_input_len":1,"random_output_len":131072,"max_concurrency":4}`, 422,
			"num_prompts, random_output_len: 10000 prompts of random would need about 62"},
		{"image that fits", `{"target":"a","dataset_name":"image","num_prompts":1000,"random_input_len":1024}`, 202, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := e.do(t, http.MethodPost, "/api/v1/benches", tc.body)
			msg, _ := m["error"].(string)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("POST %s = %d %q, want %d with %q", tc.body, code, msg, tc.code, tc.want)
			}
		})
	}
	close(fr.release)
}
