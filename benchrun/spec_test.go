package benchrun

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// TestBaseURL: bench_serving's address rule, and a backend's own API root
// taken as the server's root (ollama's /api waited 60 s on GET
// /api/v1/models, then gave up).
func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		base, host string
		port       int
		backend    string
		want       string
	}{
		{"", "0.0.0.0", 0, "sglang", "http://0.0.0.0:30000"},
		{"", "::1", 8080, "vllm", "http://[::1]:8080"},
		{"http://h:8000/v1", "", 0, "vllm", "http://h:8000"},
		{"http://h:11434/api", "", 0, "ollama", "http://h:11434"},
		{"http://h:11434/api/", "", 0, "ollama-chat", "http://h:11434"},
		// Another backend's /api is a gateway's prefix, kept.
		{"http://h:8000/api", "", 0, "vllm", "http://h:8000/api"},
	} {
		got, err := BaseURL(tc.base, tc.host, tc.port, tc.backend)
		if err != nil || got != tc.want {
			t.Errorf("BaseURL(%q, %q, %d, %s) = %q, %v; want %q", tc.base, tc.host, tc.port, tc.backend, got, err, tc.want)
		}
	}
}

// TestSpecJSONPatch: a Spec's JSON decodes as a patch (what the body
// leaves out keeps its value), in the flags' own forms, and reads back
// what it wrote.
func TestSpecJSONPatch(t *testing.T) {
	s := DefaultSpec()
	s.NumPrompts, s.Seed = 7, 9
	if err := json.Unmarshal([]byte(`{"request_rate":"inf","max_duration":"90s","compat":"chunk-itl","goodput":["ttft:500"],"random_input_len":12,"request_timeout_sec":2.5}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.NumPrompts != 7 || s.Seed != 9 || !math.IsInf(s.RequestRate, 1) || s.MaxDuration != 90*time.Second ||
		!s.Compat.ChunkITL || s.Goodput["ttft"] != 500 || s.RandomInputLen != 12 || s.RequestTimeout != 2500*time.Millisecond {
		t.Errorf("patched spec %+v", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back := DefaultSpec()
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if back.MaxDuration != s.MaxDuration || back.Compat != s.Compat || back.RandomInputLen != 12 || !math.IsInf(back.RequestRate, 1) {
		t.Errorf("round trip %+v from %s", back, b)
	}
	for _, body := range []string{`{"request_rate":"fast"}`, `{"max_duration":"forever"}`, `{"compat":"nope"}`, `{"goodput":["ttft"]}`} {
		if err := json.Unmarshal([]byte(body), new(Spec)); err == nil {
			t.Errorf("%s decoded without error", body)
		}
	}
}

// TestValidateNamesFields: one validation, each problem named by its
// field, spelt as the CLI's flag or the API's key.
func TestValidateNamesFields(t *testing.T) {
	s := DefaultSpec()
	s.BaseURL, s.NumPrompts, s.RandomRangeRatio = "http://h", 0, 1.5
	s.Sweep = &SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 2, Start: 1, Max: 8, MaxPoints: 4, SLO: bench.SLO{{}}}
	err := s.Validate()
	var p Problems
	if !errors.As(err, &p) {
		t.Fatalf("Validate() = %v, want Problems", err)
	}
	cli, api := p.Format(FlagName), p.Error()
	for _, w := range []string{"--num-prompts: must be at least 1, got 0", "--random-range-ratio: must be between 0 and 1, got 1.5", "--slo-precision: must be in (0, 1), got 2"} {
		if !strings.Contains(cli, w) {
			t.Errorf("CLI form lacks %q:\n%s", w, cli)
		}
	}
	for _, w := range []string{"num_prompts: must be at least 1", "random_range_ratio:", "sweep.slo_precision:"} {
		if !strings.Contains(api, w) {
			t.Errorf("API form lacks %q:\n%s", w, api)
		}
	}
}

// TestSpecJSONRandomImage: a bench window's body naming sglang's older
// random-image runs the image dataset, as the flag does, and the image
// checks apply to it (a backend without images refuses it).
func TestSpecJSONRandomImage(t *testing.T) {
	s := DefaultSpec()
	s.Backend, s.BaseURL, s.Model = "vllm", "http://s", "m"
	if err := json.Unmarshal([]byte(`{"dataset_name":"random-image","image_count":3}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Dataset != "image" || s.ImageCount != 3 {
		t.Errorf("dataset %q with %d images, want image with 3", s.Dataset, s.ImageCount)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "image needs a backend that carries images") {
		t.Errorf("random-image on vllm (completions): %v, want the image backends' refusal", err)
	}
}

// TestValidateAudio: the audio dataset's clips need a chat backend, and
// its prompt length is the server's usage, so --tokenize-prompt and
// --compat no-usage are refused with it; on a chat backend it validates.
func TestValidateAudio(t *testing.T) {
	for _, tc := range []struct {
		backend string
		edit    func(*Spec)
		want    string
	}{
		{"sglang-oai-chat", func(*Spec) {}, ""},
		{"vllm", func(*Spec) {}, "dataset_name: audio sends its clips as input_audio parts of a chat message"},
		{"sglang", func(*Spec) {}, "dataset_name: audio sends its clips"},
		{"vllm-chat", func(s *Spec) { s.Options.TokenizePrompt = true }, "tokenize_prompt: cannot be used with the audio dataset"},
		{"vllm-chat", func(s *Spec) { s.Compat.NoUsage = true }, "compat: no-usage cannot be used with the audio dataset"},
	} {
		s := DefaultSpec()
		s.Backend, s.BaseURL, s.Model, s.Dataset = tc.backend, "http://s", "m", "audio"
		tc.edit(&s)
		err := s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("audio on %s: %v, want %q", tc.backend, err, tc.want)
		}
	}
}
