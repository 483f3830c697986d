package runner

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

// TestMemoryBytesSaturates: the in-flight estimate of a huge concurrency
// of large audio requests saturates instead of wrapping around to a small
// number that a bench window's 1 GiB bound would let through.
func TestMemoryBytesSaturates(t *testing.T) {
	s := Spec{Params: bench.Params{Dataset: "audio", Options: datasets.DefaultOptions()}}
	s.Options.AudioCount, s.Options.AudioDuration = datasets.MaxAudioCount, 3600
	per := datasets.ImageBytes("audio", s.Options) + tokenizerBytesPerRequest
	if per == tokenizerBytesPerRequest {
		t.Fatal("no in-flight estimate for the audio dataset")
	}
	s.MaxConcurrency = 1
	if _, f := s.MemoryBytes(); f != per {
		t.Errorf("one in flight: %d bytes, want %d", f, per)
	}
	s.MaxConcurrency = math.MaxInt32
	if _, f := s.MemoryBytes(); f != math.MaxUint64 {
		t.Errorf("%d in flight of %d bytes each: %d bytes, want the estimate saturated at %d", s.MaxConcurrency, per, f, uint64(math.MaxUint64))
	}
}

// TestMemoryNeedCountsOutputs: the worst case counts what the record keeps
// of every output token, so that a window of tiny prompts and huge
// outputs (10,000 × 131,072 tokens: about 61 GiB kept) is over any
// budget, while the outputs of a small window weigh little.
func TestMemoryNeedCountsOutputs(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		prompts, in, out, mc int
		over                 bool
	}{
		{"the issue's window", 10000, 1, 131072, 4, true},
		{"a usual window", 1000, 1024, 1024, 64, false},
		{"many small requests", 100000, 16, 16, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{Params: bench.Params{Dataset: "random", NumPrompts: tc.prompts, MaxConcurrency: tc.mc, Options: datasets.DefaultOptions()}}
			s.Options.RandomInputLen, s.Options.RandomOutputLen = tc.in, tc.out
			n := s.MemoryNeed()
			want := uint64(tc.prompts) * (keptBytesPerRequest + uint64(tc.out)*keptBytesPerOutputToken)
			if n.Outputs != want {
				t.Errorf("Outputs = %d, want %d", n.Outputs, want)
			}
			if got := n.Total() > 1<<30; got != tc.over {
				t.Errorf("Total() = %d MiB: over 1 GiB %v, want %v", n.Total()>>20, got, tc.over)
			}
		})
	}
}

// TestMemoryBudgetStopsRun: a run whose outputs grow what it keeps past
// Env.MemoryBudget stops with ErrMemoryBudget, saying how much it held,
// after the request that passed it (with max_concurrency 1, the next may
// already be in flight), rather than growing until the process dies.
func TestMemoryBudgetStopsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var served atomic.Int64
		l := llmtest.NewPipeListener()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/completions" {
				http.NotFound(w, r)
				return
			}
			served.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			time.Sleep(10 * time.Millisecond)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"text":"hi"}]}`+"\n\n")
			// 40,000 tokens stated: about 2 MB kept per request.
			io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":40000,"total_tokens":40008}}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
		})}
		go func() { _ = srv.Serve(l) }()
		tr := &http.Transport{DialContext: l.Dial}

		s := DefaultSpec()
		s.Backend, s.BaseURL, s.Model, s.Tokenizer = "vllm", "http://budget.test", "m", "../../tokenizer/testdata/qwen3"
		s.Dataset, s.NumPrompts, s.MaxConcurrency = "random", 50, 1
		s.Options.RandomInputLen, s.Options.RandomOutputLen = 8, 16
		s.WarmupRequests, s.ReadyCheckTimeout, s.NoServerMetrics = 0, 0, true
		pause := time.Duration(0)
		env := Env{Logger: log.NewNopLogger(), PauseAfterWarmup: &pause, MemoryBudget: 5 << 20}
		p, err := Prepare(context.Background(), s, env)
		if err != nil {
			t.Fatal(err)
		}
		p.Client.Transport = tr
		p.Prober.Client = p.Client
		_, err = p.Run(context.Background(), env)
		tr.CloseIdleConnections()
		// Shutdown, not Close: the request after the one that passed the
		// budget may still be in its handler, and the bubble must not end
		// before that goroutine does.
		_ = srv.Shutdown(context.Background())
		if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "MiB") {
			t.Fatalf("Run() = %v, want ErrMemoryBudget with the figures", err)
		}
		if n := served.Load(); n > 4 {
			t.Errorf("%d requests served, want the run stopped after the third (about 6 MB kept of a 5 MiB budget)", n)
		}
	})
}
