package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// chatRecorder is an OpenAI chat server on loopback that answers every
// request with "answer <n>" and records each request's messages and
// headers.
type chatRecorder struct {
	mu   sync.Mutex
	reqs []recordedChat
}

type recordedChat struct {
	messages       []datasets.Message
	session, reqID string
}

func (c *chatRecorder) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []datasets.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, recordedChat{body.Messages, r.Header.Get("X-Session-Id"), r.Header.Get(requestIDHeader)})
		n := len(c.reqs)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer %d\"}}]}\n\n", n)
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":50,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":40}}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// requests returns a copy of the recorded requests: the handler's writes
// reach the test through a socket, which the race detector does not see.
func (c *chatRecorder) requests() []recordedChat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]recordedChat(nil), c.reqs...)
}

func buildTestProbe(t *testing.T, url string, m config.Module) ProbeFunc {
	t.Helper()
	tgt := config.DefaultTarget
	tgt.Name, tgt.URL, tgt.Backend, tgt.Model = "local", url, "openai-chat", "m"
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(string) (datasets.Tokenizer, error) { return tok, nil }
	pf, err := NewProbeBuilder(ProbeBuilderOptions{Tokenizer: resolve})(tgt, "conv", m)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return pf
}

// TestConversationProbe: one probe of a conversation module is a new
// conversation of its turns: turn 1 starts with a prefix no other
// conversation had, each later turn resends the history with the
// server's real answers, every request has its own request id, and the
// session header carries one id per conversation.
func TestConversationProbe(t *testing.T) {
	var rec chatRecorder
	srv := rec.start(t)
	m := config.DefaultModule
	m.Dataset, m.Turns, m.InputLen, m.TurnInputLen, m.OutputLen, m.SessionHeader = "conversation", 3, 40, 8, 2, "X-Session-Id"
	pf := buildTestProbe(t, srv.URL, m)

	var results []Result
	for range 2 {
		r := pf(context.Background(), log.NewNopLogger())
		if len(r.Before) != 2 {
			t.Fatalf("probe: %d earlier turns, want 2", len(r.Before))
		}
		results = append(append(results, r.Before...), r)
	}
	reqs := rec.requests()
	if len(reqs) != 6 {
		t.Fatalf("server saw %d requests, want 6 (two conversations of 3 turns)", len(reqs))
	}
	for i, r := range results {
		if r.Turn != i%3+1 || r.Outcome != OutcomeSuccess || r.Module != "conv" {
			t.Errorf("result %d: turn %d outcome %s module %q, want turn %d success conv", i, r.Turn, r.Outcome, r.Module, i%3+1)
		}
		if got := CachedPromptTokens(r); got != 40 {
			t.Errorf("result %d: CachedPromptTokens = %d, want the usage's 40", i, got)
		}
		if reqs[i].reqID != r.RequestID || r.RequestID == "" {
			t.Errorf("result %d: request id %q, the server saw %q", i, r.RequestID, reqs[i].reqID)
		}
	}
	for c := range 2 {
		turns := reqs[3*c : 3*c+3]
		for k, req := range turns {
			if len(req.messages) != 2*k+1 {
				t.Fatalf("conversation %d turn %d: %d messages, want %d", c, k+1, len(req.messages), 2*k+1)
			}
			for j := 1; j < len(req.messages); j += 2 {
				want := fmt.Sprintf("answer %d", 3*c+(j+1)/2)
				if m := req.messages[j]; m.Role != "assistant" || m.Content != want {
					t.Errorf("conversation %d turn %d message %d = %s %q, want the server's answer %q", c, k+1, j, m.Role, m.Content, want)
				}
			}
			if req.messages[0] != turns[0].messages[0] {
				t.Errorf("conversation %d turn %d: the first message changed within the conversation", c, k+1)
			}
			if req.session == "" || req.session != turns[0].session {
				t.Errorf("conversation %d turn %d: session %q, want turn 1's %q", c, k+1, req.session, turns[0].session)
			}
		}
	}
	a, b := reqs[0], reqs[3]
	if !strings.HasPrefix(a.messages[0].Content, "[sp-session-") || prefixOf(a.messages[0].Content) == prefixOf(b.messages[0].Content) {
		t.Errorf("first messages %.40q and %.40q: want each to start with its own fresh prefix", a.messages[0].Content, b.messages[0].Content)
	}
	if a.session == b.session {
		t.Errorf("both conversations carried session %q, want one id each", a.session)
	}
}

func prefixOf(s string) string { p, _, _ := strings.Cut(s, "\n"); return p }

// TestCacheBust: a single-turn module with cache_bust starts every
// probe's prompt with a prefix of its own; without it the prompt is the
// same every time (what the check-config warning is about).
func TestCacheBust(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bust      bool
		wantFirst string // the first message's first line without cache_bust
	}{
		{"cache_bust: a fresh prefix per probe", true, ""},
		{"no cache_bust: the same prompt", false, "ping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec chatRecorder
			srv := rec.start(t)
			m := config.Module{Dataset: "fixed", Prompt: "ping", OutputLen: 2, CacheBust: tc.bust}
			pf := buildTestProbe(t, srv.URL, m)
			for range 2 {
				if r := pf(context.Background(), log.NewNopLogger()); r.Outcome != OutcomeSuccess || r.Turn != 0 || r.Before != nil {
					t.Fatalf("probe: outcome %s turn %d before %d, want a single successful request", r.Outcome, r.Turn, len(r.Before))
				}
			}
			reqs := rec.requests()
			a, b := reqs[0].messages[0].Content, reqs[1].messages[0].Content
			if tc.bust {
				if !strings.HasSuffix(a, "\nping") || prefixOf(a) == prefixOf(b) {
					t.Errorf("prompts %q and %q: want the module's prompt after a prefix of each probe's own", a, b)
				}
			} else if a != tc.wantFirst || b != tc.wantFirst {
				t.Errorf("prompts %q and %q, want %q both times", a, b, tc.wantFirst)
			}
		})
	}
}

// TestConversationNeedsChat: a conversation on a backend that sends no
// message history fails when the module is built, not as cold turns.
func TestConversationNeedsChat(t *testing.T) {
	tgt := config.DefaultTarget
	tgt.Name, tgt.URL, tgt.Backend, tgt.Model = "local", "http://127.0.0.1:1", "openai", "m"
	m := config.DefaultModule
	m.Dataset = "conversation"
	resolve := func(string) (datasets.Tokenizer, error) { return wordTokenizer{}, nil }
	_, err := NewProbeBuilder(ProbeBuilderOptions{Tokenizer: resolve})(tgt, "conv", m)
	if err == nil || !strings.Contains(err.Error(), "needs a chat backend") {
		t.Errorf("build: %v, want the chat backend error", err)
	}
}
