package bench

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestInputTokenLinesAddUp: the table's input lines add up, total = text
// + vision + the chat template's line, whichever count the total takes.
// A chat server states its prompt count with the template in it, which
// the dataset's text count has not; the image rows carry vision tokens.
func TestInputTokenLinesAddUp(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	line := regexp.MustCompile(`(?m)^(Total input tokens|Total input text tokens|Total input vision tokens|Chat template and other server tokens):\s+(-?\d+)\s*$`)
	for _, tc := range []struct {
		name         string
		dataset      string
		text, vision int // per row
		server       int // the server's prompt count per request
		compat       bool
		wantTemplate int
	}{
		{"chat text: the server counts the template", "random", 100, 0, 120, false, 3 * 20},
		{"image: the server counts the template and images", "image", 40, 300, 360, false, 3 * 20},
		{"completions: the server's count is the dataset's", "random", 100, 0, 100, false, 0},
		{"dataset counts in compat", "image", 40, 300, 360, true, 0},
		// A server that counts fewer tokens than our tokenizer: no
		// negative template count, the mismatch named instead.
		{"the server counts fewer: another tokenizer", "random", 100, 0, 80, false, -3 * 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var results []prober.Result
			var rows []datasets.Prompt
			for i := range 3 {
				results = append(results, prober.Result{Stream: true, Outcome: prober.OutcomeSuccess, Scheduled: at(10 * i), Sent: at(10 * i),
					FirstToken: at(10*i + 5), End: at(10*i + 9), OutputTokens: 1, Events: []prober.Event{{At: at(10*i + 5), Tokens: 1}},
					InputTokens: tc.server, InputTokensSource: prober.TokenSourceUsage})
				rows = append(rows, datasets.Prompt{Text: "x", PromptLen: tc.text + tc.vision, TextPromptLen: tc.text, VisionPromptLen: tc.vision, OutputLen: 1})
			}
			p := Params{Backend: "vllm-chat", Dataset: tc.dataset, Duration: time.Second}
			p.Compat.DatasetInputTokens = tc.compat
			s, err := Summarize(results, rows, p)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := s.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, m := range line.FindAllStringSubmatch(b.String(), -1) {
				got[m[1]], _ = strconv.Atoi(m[2])
			}
			total, text, vision, tmpl := got["Total input tokens"], got["Total input text tokens"], got["Total input vision tokens"], got["Chat template and other server tokens"]
			if tc.wantTemplate < 0 {
				want := "Tokenizer mismatch:                      the server counted 60 fewer input tokens than our tokenizer; it is not the server model's (--tokenizer)"
				if _, shown := got["Chat template and other server tokens"]; shown || !strings.Contains(b.String(), want) {
					t.Errorf("a negative template count: want no template line and %q:\n%s", want, b.String())
				}
				return
			}
			if total != text+vision+tmpl {
				t.Errorf("total %d != text %d + vision %d + template %d:\n%s", total, text, vision, tmpl, b.String())
			}
			if tmpl != tc.wantTemplate || text != 3*tc.text || vision != 3*tc.vision {
				t.Errorf("template %d text %d vision %d, want %d, %d, %d:\n%s", tmpl, text, vision, tc.wantTemplate, 3*tc.text, 3*tc.vision, b.String())
			}
			if _, shown := got["Chat template and other server tokens"]; shown != (tc.wantTemplate != 0) {
				t.Errorf("template line shown: %v, want it only when it is not 0", shown)
			}
		})
	}
}
