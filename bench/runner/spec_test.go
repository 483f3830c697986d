package runner

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
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
// field, a key of the Spec's JSON (SpecKeys), which the API shows as it is
// and the CLI spells as the flag that sets it.
func TestValidateNamesFields(t *testing.T) {
	s := DefaultSpec()
	s.BaseURL, s.NumPrompts, s.RandomRangeRatio = "http://h", 0, 1.5
	s.Sweep = &SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 2, Start: 1, Max: 8, MaxPoints: 4, SLO: bench.SLO{{}}}
	s.Profile.PrefillURLs = []string{"http://p"}
	err := s.Validate()
	var p Problems
	if !errors.As(err, &p) {
		t.Fatalf("Validate() = %v, want Problems", err)
	}
	keys := SpecKeys()
	for _, q := range p {
		if q.Field != "" && !slices.Contains(keys, q.Field) {
			t.Errorf("problem %q names %q, which is no key of SpecKeys", q.Msg, q.Field)
		}
	}
	cli := p.Format(func(k string) string { return "<" + k + ">" })
	for _, w := range []string{"<num_prompts>: must be at least 1, got 0", "<random_range_ratio>: must be between 0 and 1, got 1.5", "<sweep.slo_precision>: must be in (0, 1), got 2", "<profile.pd_separated>: must be set"} {
		if !strings.Contains(cli, w) {
			t.Errorf("Format lacks %q:\n%s", w, cli)
		}
	}
	api := p.Error()
	for _, w := range []string{"num_prompts: must be at least 1", "random_range_ratio:", "sweep.slo_precision:"} {
		if !strings.Contains(api, w) {
			t.Errorf("API form lacks %q:\n%s", w, api)
		}
	}
}

// TestSpecKeys: the keys are the JSON's, nested objects dotted, and the
// Spec fields the JSON leaves out are not among them.
func TestSpecKeys(t *testing.T) {
	keys := SpecKeys()
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"backend", true},
		{"dataset_name", true},     // bench.Params, embedded
		{"random_input_len", true}, // datasets.Options, embedded in it
		{"cache_report", true},     // bench.CacheCostParams, embedded in that
		{"profile.enabled", true},
		{"sweep.slo_max", true},
		{"sweep.request_rates", true},
		{"shard", true},
		{"profile", false}, // an object: its keys are listed
		{"sweep", false},
		{"insecure", false}, // the CLI's only
		{"details", false},
		{"Details", false},
		{"chat_template", false},
	} {
		if got := slices.Contains(keys, tc.key); got != tc.want {
			t.Errorf("SpecKeys() has %q: %v, want %v", tc.key, got, tc.want)
		}
	}
	// Every top-level key is one the JSON writes (the omitempty ones when
	// set).
	s := DefaultSpec()
	s.Shard, s.RunID, s.StartAt = &Shard{Index: 0, Count: 2}, "r", "2026-01-01T00:00:00Z"
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, ".") {
			continue
		}
		if _, ok := m[k]; !ok {
			t.Errorf("key %q is not in a Spec's JSON", k)
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

// TestValidateValidNeedsChecks: an SLO search whose SLO requires a share
// of valid answers judges answers, so it needs checks; without them every
// point would fail the objective and the search would answer 0.
func TestValidateValidNeedsChecks(t *testing.T) {
	slo, err := bench.ParseSLO("ttft:p99<=1s,valid>=99%")
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSpec()
	s.BaseURL, s.Backend = "http://h", "vllm-chat"
	s.Sweep = &SweepSpec{Mode: bench.SweepSLO, By: bench.ByRequestRate, Precision: 0.1, Start: 1, Max: 8, MaxPoints: 4, PointTime: time.Minute, SLO: slo}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "sweep.slo: valid>=P% needs answer checks") {
		t.Errorf("Validate() without checks = %v, want the valid objective refused", err)
	}
	s.Checks.Regex = "."
	if err := s.Validate(); err != nil {
		t.Errorf("Validate() with a regex check = %v, want nil", err)
	}
}
