package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTruthRingEvicts(t *testing.T) {
	cfg := fastConfig()
	cfg.TruthSize = 2
	s := newServer(t, cfg)
	for i := range 3 {
		serveRecorded(s, context.Background(), "/v1/completions", fmt.Sprint(i), `{"prompt":"x","max_tokens":1}`)
	}
	for id, want := range map[string]bool{"0": false, "1": true, "2": true} {
		if _, ok := s.Truth(id); ok != want {
			t.Errorf("Truth(%q) found = %v, want %v", id, ok, want)
		}
	}
}

func TestTruthDisabled(t *testing.T) {
	cfg := fastConfig()
	cfg.TruthSize = 0
	s := newServer(t, cfg)
	serveRecorded(s, context.Background(), "/v1/completions", "x", `{"prompt":"x","max_tokens":1}`)
	if _, ok := s.Truth("x"); ok {
		t.Error("Truth found a record with truth disabled")
	}
	if _, err := s.WaitTruth(context.Background(), "x"); !errors.Is(err, errTruthDisabled) {
		t.Errorf("WaitTruth error = %v, want errTruthDisabled", err)
	}
}

func TestWaitTruth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, timedConfig())
		got := make(chan Truth)
		go func() {
			tr, err := s.WaitTruth(context.Background(), "later")
			if err != nil {
				t.Error(err)
			}
			got <- tr
		}()
		synctest.Wait() // the waiter is registered before the request arrives
		go serveRecorded(s, context.Background(), "/v1/completions", "later", `{"prompt":[1],"max_tokens":2,"ignore_eos":true,"stream":true}`)
		tr := <-got
		if tr.CompletionTokens != 2 || len(tr.Chunks) != 3 {
			t.Errorf("truth = %+v, want 2 tokens in 3 chunks", tr)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := s.WaitTruth(ctx, "never"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitTruth(never) = %v, want deadline exceeded", err)
		}
		if n := len(s.truth.waiters); n != 0 {
			t.Errorf("%d waiter lists left after a timeout", n)
		}
	})
}

func TestTruthEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, timedConfig())
		serveRecorded(s, context.Background(), "/generate", "g1", `{"text":"abcd","sampling_params":{"max_new_tokens":2,"ignore_eos":true},"stream":true}`)
		arrived := time.Now().UnixNano() - int64(111*time.Millisecond)
		for _, tc := range []struct {
			path   string
			status int
		}{
			{"/debug/truth/g1", 200},
			{"/debug/truth/g1?wait=1s", 200},
			{"/debug/truth/nope", 404},
			{"/debug/truth/nope?wait=10ms", 404},
			{"/debug/truth/g1?wait=forever", 400},
		} {
			w := serveGet(s, tc.path)
			if w.Code != tc.status {
				t.Errorf("GET %s = %d, want %d: %s", tc.path, w.Code, tc.status, w.Body)
			}
		}
		var got map[string]any
		if err := json.Unmarshal(serveGet(s, "/debug/truth/g1").Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"request_id": "g1", "endpoint": "sglang-generate",
			"arrived_unix_nano": float64(arrived), "admitted_unix_nano": float64(arrived),
			"headers_flushed_unix_nano": float64(arrived), "finished_unix_nano": float64(arrived + int64(111*time.Millisecond)),
			"prompt_tokens": 1.0, "cached_tokens": 0.0, "completion_tokens": 2.0,
			"chunks": []any{
				map[string]any{"kind": "token", "offset_nanos": 101e6, "unix_nano": float64(arrived + 101e6), "tokens": 1.0, "bytes": got["chunks"].([]any)[0].(map[string]any)["bytes"]},
				map[string]any{"kind": "token", "offset_nanos": 111e6, "unix_nano": float64(arrived + 111e6), "tokens": 1.0, "bytes": got["chunks"].([]any)[1].(map[string]any)["bytes"]},
				map[string]any{"kind": "done", "offset_nanos": 111e6, "unix_nano": float64(arrived + 111e6), "tokens": 1.0 - 1, "bytes": float64(len("data: [DONE]\n\n"))},
			},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("truth JSON (-want +got):\n%s", diff)
		}
	})
}

func serveGet(s *Server, path string) *responseRecorder {
	w := newRecorder()
	s.Handler().ServeHTTP(w, newGet(path))
	return w
}

func TestChunkKindNames(t *testing.T) {
	for k := ChunkRole; k <= ChunkBody; k++ {
		if s := k.String(); s == "" || s == "unknown" || strings.ToLower(s) != s {
			t.Errorf("ChunkKind(%d).String() = %q", k, s)
		}
	}
}
