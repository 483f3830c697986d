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

// TestAzureTrace reads the shipped rows of Azure's LLM inference traces:
// the first rows of AzureLLMInferenceTrace_code.csv and _conv.csv (2023,
// as published in github.com/Azure/AzurePublicDataset) and rows in the
// 2024 release's layout (zone suffix, microseconds; the values made up,
// one with GeneratedTokens 0, which is skipped). Replaying timestamps,
// request i is row i at its TIMESTAMP from the first's, stretched by the
// slowdown factor, with ContextTokens ids as its prompt and
// GeneratedTokens as its output length.
func TestAzureTrace(t *testing.T) {
	tok := qwen3(t)
	type row struct {
		in, out int
		ts      time.Duration
	}
	for _, tc := range []struct {
		file     string
		slowdown float64
		n        int
		want     []row
	}{
		{"azure_code_2023.csv", 1, 4, []row{{4808, 10, 0}, {3180, 8, 52 * time.Millisecond},
			{110, 27, 98189 * time.Microsecond}, {7433, 14, 140684 * time.Microsecond}}},
		{"azure_conv_2023.csv", 0.5, 0, []row{{374, 44, 0}, {396, 109, 2157289500 * time.Nanosecond},
			{879, 55, 2270938500 * time.Nanosecond}, {91, 16, 2355213500 * time.Nanosecond}, {91, 16, 2946327500 * time.Nanosecond}}},
		{"azure_conv_2024.csv", 2, 10, []row{{1031, 21, 0}, {87, 340, 480140 * time.Microsecond}, {5, 1, 1980140 * time.Microsecond}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			o := datasets.DefaultOptions()
			o.DatasetPath = filepath.Join("testdata", tc.file)
			o.TraceOrder, o.MooncakeSlowdownFactor = true, tc.slowdown
			d, err := datasets.New("azure-trace", o, tok)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Generate(tc.n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d prompts, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				p := got[i]
				if p.PromptLen != w.in || p.OutputLen != w.out || p.Timestamp != w.ts {
					t.Errorf("prompt %d: lengths %d/%d at %v, want %d/%d at %v", i, p.PromptLen, p.OutputLen, p.Timestamp, w.in, w.out, w.ts)
				}
				ids := make([]int, w.in)
				for j := range ids {
					ids[j] = (i + j) % tok.VocabSize()
				}
				if text, err := tok.Decode(ids, false); err != nil || p.Text != text {
					t.Errorf("prompt %d: text %.40q, want the decoded ids %.40q (%v)", i, p.Text, text, err)
				}
			}
		})
	}
}

// TestAzureTraceDrawn: without replaying timestamps the rows are drawn,
// each once while the trace has enough (a sample of the whole file, not
// its first rows), with replacement beyond, and carry no time.
func TestAzureTraceDrawn(t *testing.T) {
	o := datasets.DefaultOptions()
	o.DatasetPath = "testdata/azure_code_2023.csv"
	d, err := datasets.New("azure-trace", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	all := map[int]bool{4808: true, 3180: true, 110: true, 7433: true, 34: true, 374: true}
	lastSeen := false
	for seed := range uint64(20) {
		got, err := d.Generate(3, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range got {
			if p.Timestamp != 0 || !all[p.PromptLen] || seen[p.PromptLen] {
				t.Fatalf("seed %d: drawn %d/%d at %v, want distinct rows of the trace with no time", seed, p.PromptLen, p.OutputLen, p.Timestamp)
			}
			seen[p.PromptLen] = true
		}
		lastSeen = lastSeen || seen[374]
	}
	if !lastSeen {
		t.Error("the trace's last row was never drawn in 20 seeds: the sample does not reach the end of the file")
	}
	if more, err := d.Generate(9, rand.New(rand.NewPCG(1, 0))); err != nil || len(more) != 9 {
		t.Errorf("9 drawn of 6 rows: %d prompts (%v), want 9 (with replacement, as burstgpt)", len(more), err)
	}
}

// TestAzureTraceErrors: a file that is not such a trace, a bad row or a
// trace without a usable row is refused, naming what is wrong.
func TestAzureTraceErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"burstgpt header", "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,2,3\n", `no "TIMESTAMP" column`},
		{"bad time", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,1,2\n12:00,3,4\n", "bad.csv:3:"},
		{"negative count", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,-1,2\n", "bad.csv:2:"},
		{"no output", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,1,0\n", "no row with GeneratedTokens above 0"},
	} {
		path := filepath.Join(dir, "bad.csv")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		o := datasets.DefaultOptions()
		o.DatasetPath, o.TraceOrder = path, true
		d, err := datasets.New("azure-trace", o, qwen3(t))
		if err == nil {
			_, err = d.Generate(0, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
