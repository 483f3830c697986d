package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// tokenizeOptions are the flags of `servingprobe tokenize`.
type tokenizeOptions struct {
	spec        string
	count       bool
	decode      bool
	addSpecial  bool
	skipSpecial bool
}

// addTokenizeCommand registers `tokenize` and returns the function that runs
// it once kingpin has parsed the flags.
func addTokenizeCommand(app *kingpin.Application) func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	var o tokenizeOptions
	cmd := app.Command("tokenize", "Tokenize JSON Lines from stdin: one JSON string per line in, one JSON array of token ids per line out.")
	cmd.Flag("tokenizer", "A tokenizer.json file (or .json.gz), a directory holding one, a Hugging Face hub model id (org/name[@revision]; cached as huggingface_hub does, honouring HF_HOME, HF_TOKEN and HF_HUB_OFFLINE), or the base URL of a vLLM/SGLang server, whose /tokenize endpoint is used.").
		Required().StringVar(&o.spec)
	cmd.Flag("count", "Write the number of tokens per line instead of the ids.").BoolVar(&o.count)
	cmd.Flag("decode", "Decode instead: read one JSON array of ids per line, write one JSON string per line.").BoolVar(&o.decode)
	cmd.Flag("add-special-tokens", "Add the tokenizer's special tokens (e.g. BOS) when encoding, as HF's add_special_tokens.").
		Default("true").BoolVar(&o.addSpecial)
	cmd.Flag("skip-special-tokens", "Drop special tokens when decoding.").BoolVar(&o.skipSpecial)
	return func(ctx context.Context, stdin io.Reader, stdout, _ io.Writer) error {
		if o.count && o.decode {
			return errors.New("--count and --decode are mutually exclusive")
		}
		tok, err := loadTokenizer(ctx, o.spec)
		if err != nil {
			return err
		}
		return tokenizeStream(ctx, tok, o, stdin, stdout)
	}
}

// loadTokenizer resolves --tokenizer: a URL means the server's /tokenize.
func loadTokenizer(ctx context.Context, spec string) (datasets.Tokenizer, error) {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		return tokenizer.NewServer(http.DefaultClient, spec, ""), nil
	}
	return tokenizer.ResolveAny(ctx, spec, nil)
}

// tokenizeStream converts stdin to stdout line by line. Output is flushed
// whenever the input has no more buffered data, so that it streams through
// pipes without a flush per line.
func tokenizeStream(ctx context.Context, tok datasets.Tokenizer, o tokenizeOptions, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	var buf []byte
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			return errors.Join(err, w.Flush())
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return w.Flush()
		}
		if err != nil && err != io.EOF {
			return errors.Join(fmt.Errorf("read stdin: %w", err), w.Flush())
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			if buf, err = tokenizeLine(tok, o, line, buf[:0]); err != nil {
				return errors.Join(fmt.Errorf("line %d: %w", lineNo, err), w.Flush())
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
}

// tokenizeLine handles one non-empty input line and appends the output
// (without newline) to dst.
func tokenizeLine(tok datasets.Tokenizer, o tokenizeOptions, line, dst []byte) ([]byte, error) {
	if o.decode {
		var ids []int
		if err := json.Unmarshal(line, &ids); err != nil {
			return dst, fmt.Errorf("want a JSON array of token ids: %w", err)
		}
		text, err := tok.Decode(ids, o.skipSpecial)
		if err != nil {
			return dst, err
		}
		return appendJSONString(dst, text)
	}
	var text string
	if err := json.Unmarshal(line, &text); err != nil {
		return dst, fmt.Errorf("want a JSON string: %w", err)
	}
	ids, err := tok.Encode(text, o.addSpecial)
	if err != nil {
		return dst, err
	}
	if o.count {
		return strconv.AppendInt(dst, int64(len(ids)), 10), nil
	}
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	return append(dst, ']'), nil
}

// appendJSONString encodes s without HTML escaping, so "<|im_end|>" stays
// readable.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}
