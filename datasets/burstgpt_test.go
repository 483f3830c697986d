package datasets_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestBurstGPT reads the shipped rows (BurstGPT's CSV layout; the values
// are made up) as vLLM's BurstGPTDataset does: only GPT-4 rows with
// Response tokens above 0 (three of six); request i's prompt is the ids
// (i+j) mod the vocab size for j below its Request tokens, decoded, with
// the row's lengths. Replaying timestamps takes the rows in file order at
// their Timestamp (seconds) from the first's, stretched by the slowdown
// factor; otherwise the rows are drawn, without replacement while there
// are enough.
func TestBurstGPT(t *testing.T) {
	tok := qwen3(t)
	o := datasets.DefaultOptions()
	o.DatasetPath = "testdata/burstgpt.csv"
	o.TraceOrder, o.MooncakeSlowdownFactor = true, 0.5
	d, err := datasets.New("burstgpt", o, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Generate(10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		in, out int
		ts      time.Duration
	}{{1087, 230, 0}, {22, 121, 57500 * time.Millisecond}, {9, 4, 58250 * time.Millisecond}}
	if len(got) != len(want) {
		t.Fatalf("%d prompts, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if p.PromptLen != w.in || p.OutputLen != w.out || p.Timestamp != w.ts {
			t.Errorf("prompt %d: lengths %d/%d at %v, want %d/%d at %v", i, p.PromptLen, p.OutputLen, p.Timestamp, w.in, w.out, w.ts)
		}
		ids := make([]int, w.in)
		for j := range ids {
			ids[j] = (i + j) % tok.VocabSize()
		}
		text, err := tok.Decode(ids, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Text != text {
			t.Errorf("prompt %d: text %.40q, want the decoded ids %.40q", i, p.Text, text)
		}
	}

	o.TraceOrder = false
	d, err = datasets.New("burstgpt", o, tok)
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := d.Generate(3, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range drawn {
		if p.Timestamp != 0 {
			t.Errorf("drawn prompt at %v, want no time", p.Timestamp)
		}
		seen[p.PromptLen] = true
	}
	if len(seen) != 3 || !seen[1087] || !seen[22] || !seen[9] {
		t.Errorf("3 drawn of 3 rows: input lengths %v, want each row once", seen)
	}
	if more, _ := d.Generate(7, rand.New(rand.NewPCG(1, 0))); len(more) != 7 {
		t.Errorf("7 drawn of 3 rows: %d prompts, want 7 (with replacement, as vLLM)", len(more))
	}
}

// TestBurstGPTErrors: a CSV without BurstGPT's columns, with a bad count,
// or without a usable row is refused, naming what is wrong.
func TestBurstGPTErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"no model column", "Timestamp,Request tokens,Response tokens\n1,2,3\n", `no "Model" column`},
		{"bad count", "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,x,3\n", "bad.csv:2:"},
		{"no GPT-4 row", "Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,2,3\n", "no GPT-4 row"},
	} {
		path := filepath.Join(dir, "bad.csv")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		o := datasets.DefaultOptions()
		o.DatasetPath = path
		if _, err := datasets.New("burstgpt", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
