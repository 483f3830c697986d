package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/google/go-cmp/cmp"
)

// The tiny Metaspace tokenizer adds a BOS (id 1), which exercises
// --add-special-tokens; its ids come from HF's tokenizers.js.
var tinyTokenizer = filepath.Join("..", "..", "tokenizer", "testdata", "metaspace-legacy")

func TestTokenizeCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "ids with BOS",
			args: nil,
			in:   "\"the server\"\n\"Hello, world!\"\n",
			want: "[1,339,362]\n[1,259,293,383,323,259,370,277,271,263,326]\n",
		},
		{
			name: "no special tokens, blank lines skipped, no final newline",
			args: []string{"--no-add-special-tokens"},
			in:   "\"the server\"\n\n  \n\"\"",
			want: "[339,362]\n[]\n",
		},
		{
			name: "count",
			args: []string{"--count"},
			in:   "\"the server\"\n\"\"\n",
			want: "3\n1\n",
		},
		{
			name: "count without special tokens",
			args: []string{"--count", "--no-add-special-tokens"},
			in:   "\"the server\"\n",
			want: "2\n",
		},
		{
			name: "decode",
			args: []string{"--decode"},
			in:   "[1,339,362]\n[339]\n",
			want: "\"<s> the server\"\n\"the\"\n",
		},
		{
			name: "decode skipping special tokens",
			args: []string{"--decode", "--skip-special-tokens"},
			in:   "[1,339,362]\n",
			want: "\"the server\"\n",
		},
		{
			name:    "bad line names its number",
			args:    nil,
			in:      "\"the server\"\n{\"not\": \"a string\"}\n",
			want:    "[1,339,362]\n",
			wantErr: "line 2: want a JSON string",
		},
		{
			name:    "decode needs arrays",
			args:    []string{"--decode"},
			in:      "\"text\"\n",
			wantErr: "line 1: want a JSON array of token ids",
		},
		{
			name:    "decode of an unknown id",
			args:    []string{"--decode"},
			in:      "[1]\n[99999999]\n",
			want:    "\"<s>\"\n",
			wantErr: "line 2: decode: token id 99999999 out of vocabulary",
		},
		{
			name:    "count and decode conflict",
			args:    []string{"--count", "--decode"},
			wantErr: "mutually exclusive",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := kingpin.New("servingprobe", "")
			app.Terminate(nil)
			runTokenize := addTokenizeCommand(app)
			cmd, err := app.Parse(append([]string{"tokenize", "--tokenizer", tinyTokenizer}, tc.args...))
			if err != nil || cmd != "tokenize" {
				t.Fatalf("Parse() = %q, %v", cmd, err)
			}
			var out bytes.Buffer
			err = runTokenize(context.Background(), strings.NewReader(tc.in), &out, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("tokenize error = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("tokenize: %v", err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenizeRequiresTokenizer(t *testing.T) {
	app := kingpin.New("servingprobe", "")
	app.Terminate(nil)
	addTokenizeCommand(app)
	if _, err := app.Parse([]string{"tokenize"}); err == nil || !strings.Contains(err.Error(), "--tokenizer") {
		t.Errorf("Parse(tokenize) error = %v, want required --tokenizer", err)
	}
}
