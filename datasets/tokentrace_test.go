package datasets_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestTokenTrace reads the shipped rows as sglang's
// sample_token_trace_requests does: input_tokens sent as they are;
// num_input_tokens over the ids' count; num_output_tokens over the
// output ids' count, and --sharegpt-output-len over both; rows without
// input tokens or with a length below 1 skipped; file order kept; the
// first n rows only. ts is milliseconds (sglang's replay divides every
// timestamp by 1000) from the first row's, stretched by the slowdown
// factor; a row without one has none.
func TestTokenTrace(t *testing.T) {
	o := datasets.DefaultOptions()
	o.DatasetPath = "testdata/token_trace.jsonl"
	d, err := datasets.New("token-trace", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Generate(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		IDs     []int
		In, Out int
		TS      time.Duration
	}
	var rows []row
	for _, p := range got {
		if p.Text != "" || p.PromptLen != p.TextPromptLen {
			t.Errorf("prompt %v: want no text and a text length equal to its length", p.IDs)
		}
		rows = append(rows, row{p.IDs, p.PromptLen, p.OutputLen, p.Timestamp})
	}
	want := []row{
		{[]int{101, 102, 103, 104}, 4, 3, 0},
		{[]int{201, 202}, 5, 6, 250500 * time.Microsecond},
		{[]int{401}, 1, 2, -100 * time.Millisecond},
		{[]int{501, 502}, 2, 3, 0},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("token-trace prompts (-want +got):\n%s", diff)
	}

	first, _ := d.Generate(2, nil)
	if len(first) != 2 || first[1].IDs[0] != 201 {
		t.Errorf("Generate(2) = %v, want the first two rows", first)
	}

	o.SharegptOutputLen, o.MooncakeSlowdownFactor = 9, 2
	d, err = datasets.New("token-trace", o, qwen3(t))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = d.Generate(2, nil)
	if got[0].OutputLen != 9 || got[1].OutputLen != 9 || got[1].Timestamp != 501*time.Millisecond {
		t.Errorf("with --sharegpt-output-len 9 and slowdown 2: output lengths %d, %d and second offset %v, want 9, 9 and 501ms",
			got[0].OutputLen, got[1].OutputLen, got[1].Timestamp)
	}
}

// TestTokenTraceErrors: a damaged line is an error naming it (sglang
// skips it silently), as are a trace with no usable row and no path.
func TestTokenTraceErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", "{\"input_tokens\": [1], \"num_output_tokens\": 2}\n{\"input_tokens\": [1,\n", "bad.jsonl:2:"},
		{"no usable row", "{\"input_tokens\": [], \"num_output_tokens\": 2}\n", "no row has input tokens"},
		{"ids not integers", "{\"input_tokens\": [\"a\"], \"num_output_tokens\": 2}\n", "bad.jsonl:1:"},
	} {
		path := filepath.Join(dir, "bad.jsonl")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		o := datasets.DefaultOptions()
		o.DatasetPath = path
		if _, err := datasets.New("token-trace", o, qwen3(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := datasets.New("token-trace", datasets.DefaultOptions(), qwen3(t)); err == nil || !strings.Contains(err.Error(), "--dataset-path") {
		t.Errorf("no path: error %v, want one naming --dataset-path", err)
	}
}
