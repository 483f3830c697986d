package prober

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

func TestModuleDataset(t *testing.T) {
	want := func(edit func(*datasets.Options)) datasets.Options {
		o := datasets.DefaultOptions()
		edit(&o)
		return o
	}
	for _, tc := range []struct {
		name     string
		m        config.Module
		wantName string
		want     datasets.Options
	}{
		{"fixed: the prompt and its length",
			config.Module{Dataset: "fixed", Prompt: "hello", OutputLen: 8},
			"fixed", want(func(o *datasets.Options) {
				o.FixedPrompt, o.FixedOutputLen = "hello", 8
				o.RandomInputLen, o.RandomOutputLen, o.SharegptOutputLen = 0, 8, 8
			})},
		{"random: lengths, range and the chat template; bench_serving's defaults for the rest",
			config.Module{Dataset: "random", InputLen: 32, OutputLen: 4, RangeRatio: 0.5, ApplyChatTemplate: true},
			"random", want(func(o *datasets.Options) {
				o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = 32, 4, 0.5
				o.FixedOutputLen, o.SharegptOutputLen, o.ApplyChatTemplate = 4, 4, true
			})},
		{"sharegpt: the file and the output length",
			config.Module{Dataset: "sharegpt", DatasetPath: "/data/sg.json", OutputLen: 16},
			"sharegpt", want(func(o *datasets.Options) {
				o.DatasetPath, o.SharegptOutputLen = "/data/sg.json", 16
				o.RandomInputLen, o.RandomOutputLen, o.FixedOutputLen = 0, 16, 16
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, got := ModuleDataset(tc.m)
			if name != tc.wantName {
				t.Errorf("ModuleDataset name = %q, want %q", name, tc.wantName)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ModuleDataset options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProbeBuilder: a probe built from a target and a module sends the
// module's prompt with its request options and our request id, and
// reports that id; a module that cannot be built fails at build time.
func TestProbeBuilder(t *testing.T) {
	type seen struct{ body, id, auth string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{string(b), r.Header.Get(requestIDHeader), r.Header.Get("X-Team")}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"pong"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	tgt := config.DefaultTarget
	tgt.Name, tgt.URL, tgt.Backend, tgt.Model = "local", srv.URL, "vllm-chat", "m"
	mod := config.Module{Dataset: "fixed", Prompt: "ping from the module", OutputLen: 1, Headers: map[string]string{"X-Team": "llm"}}
	resolve := func(string) (datasets.Tokenizer, error) { return wordTokenizer{}, nil }
	build := NewProbeBuilder(ProbeBuilderOptions{Tokenizer: resolve})

	pf, err := build(tgt, "fixed", mod)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	r := pf(context.Background(), log.NewNopLogger())
	s := <-got
	if r.Outcome != OutcomeSuccess {
		t.Errorf("probe outcome %s (%s), want success", r.Outcome, r.Err)
	}
	if !strings.Contains(s.body, "ping from the module") {
		t.Errorf("request body %s: want the module's prompt", s.body)
	}
	if s.auth != "llm" {
		t.Errorf("X-Team header %q, want the module's %q", s.auth, "llm")
	}
	if s.id == "" || s.id != r.RequestID {
		t.Errorf("request id header %q, result's %q: want the same, set", s.id, r.RequestID)
	}
	if r.Target != "local" || r.Module != "fixed" {
		t.Errorf("result target %q module %q, want local and fixed", r.Target, r.Module)
	}

	for _, tc := range []struct {
		name string
		o    ProbeBuilderOptions
		t    func(config.Target) config.Target
		want string
	}{
		{"unknown backend", ProbeBuilderOptions{Tokenizer: resolve},
			func(t config.Target) config.Target { t.Backend = "tgi"; return t }, `unknown backend "tgi"`},
		{"no tokenizer resolver", ProbeBuilderOptions{},
			func(t config.Target) config.Target { return t }, "no tokenizer resolver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewProbeBuilder(tc.o)(tc.t(tgt), "fixed", mod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("build: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
