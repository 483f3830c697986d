package prober

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// wordTokenizer counts words; with a template it renders ChatML, whose
// markers count as words too, as a real tokenizer counts special tokens.
type wordTokenizer struct{}

func (wordTokenizer) Encode(text string, _ bool) ([]int, error) {
	return make([]int, len(strings.Fields(text))), nil
}
func (wordTokenizer) Decode([]int, bool) (string, error) { return "", nil }
func (wordTokenizer) NumSpecialTokensToAdd() int         { return 0 }
func (wordTokenizer) VocabSize() int                     { return 100 }

type templatedWordTokenizer struct{ wordTokenizer }

func (templatedWordTokenizer) ApplyChatTemplate(msgs []datasets.Message, gen bool) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "<|im_start|> %s %s <|im_end|> ", m.Role, m.Content)
	}
	if gen {
		b.WriteString("<|im_start|> assistant")
	}
	return b.String(), nil
}

type brokenTemplateTokenizer struct{ wordTokenizer }

func (brokenTemplateTokenizer) ApplyChatTemplate([]datasets.Message, bool) (string, error) {
	return "", errors.New("no chat template")
}

// TestFailedChatInputCount: a chat request cut before the server stated
// its usage counts its input as the server would, through the chat
// template (3 words become 8 tokens here); without a template the count
// is the text's and its source says it leaves the template out. A
// completions request counts its text.
func TestFailedChatInputCount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		} else {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n")
		}
		// The stream ends without a finish or usage: cut.
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, backend string
		tok           datasets.Tokenizer
		want          int
		src           TokenSource
	}{
		{"chat, template", "openai-chat", templatedWordTokenizer{}, 8, TokenSourceTokenizer},
		{"chat, no template", "openai-chat", wordTokenizer{}, 3, TokenSourceNoTemplate},
		{"chat, template fails", "openai-chat", brokenTemplateTokenizer{}, 3, TokenSourceNoTemplate},
		{"completions", "openai", templatedWordTokenizer{}, 3, TokenSourceTokenizer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be, err := NewBackend(tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			p := &Prober{Client: srv.Client(), Backend: be, Name: tc.backend, Counter: TokenizerCounter{Tokenizer: tc.tok},
				Options: RequestOptions{BaseURL: srv.URL, Model: "m", Stream: true}}
			res := p.Run(t.Context(), datasets.Prompt{Text: "what is blue", PromptLen: 3, OutputLen: 4}, time.Time{})
			if res.Outcome != OutcomeStreamCut {
				t.Fatalf("outcome %s (%s), want stream_cut", res.Outcome, res.Err)
			}
			if res.InputTokens != tc.want || res.InputTokensSource != tc.src {
				t.Errorf("input %d (%s), want %d (%s)", res.InputTokens, res.InputTokensSource, tc.want, tc.src)
			}
		})
	}
}
