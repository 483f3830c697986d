package prober

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// seedTranscripts adds every golden transcript of a backend (or all) to f.
func seedTranscripts(f *testing.F, backend string) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", backend, "*.sse"))
	ndjson, _ := filepath.Glob(filepath.Join("testdata", backend, "*.ndjson"))
	files = append(files, ndjson...)
	var out [][]byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		f.Fatalf("no seed transcripts for %q", backend)
	}
	return out
}

// FuzzSSEReader feeds arbitrary bodies, in arbitrary read sizes, to the
// reader: it must not panic, must return only bounded events, and must
// agree with itself whatever the read boundaries are.
func FuzzSSEReader(f *testing.F) {
	for _, b := range seedTranscripts(f, "*") {
		f.Add(b, uint8(7))
	}
	f.Add([]byte("data: a\r\n\r\ndata: b\r\rdata: c\n\n"), uint8(1))
	f.Add([]byte(": only a comment\n"), uint8(3))
	f.Add([]byte("{\"a\":1}\n{\"b\":2}"), uint8(2))
	f.Add(bytes.Repeat([]byte("data: x"), 1000), uint8(200))
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		lim := Limits{MaxEventBytes: 4096, MaxResponseBytes: 1 << 20}
		read := func(r io.Reader) ([]string, error) {
			sr := NewStreamReader(r, FormatAuto, lim, nil)
			var evs []string
			for {
				ev, _, err := sr.Next()
				if err != nil {
					if err == io.EOF {
						err = nil
					}
					return evs, err
				}
				if len(ev.Data) > lim.MaxEventBytes {
					t.Fatalf("event of %d bytes exceeds the %d limit", len(ev.Data), lim.MaxEventBytes)
				}
				evs = append(evs, string(ev.Data))
			}
		}
		whole, errWhole := read(bytes.NewReader(body))
		split, errSplit := read(&stepReader{b: body, step: int(step%64) + 1})
		if errWhole == nil && errSplit == nil && strings.Join(whole, "\x00") != strings.Join(split, "\x00") {
			t.Fatalf("read boundaries changed the events:\n whole %q\n split %q", whole, split)
		}
	})
}

// stepReader returns at most step bytes per Read.
type stepReader struct {
	b    []byte
	step int
}

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestSSEReaderHugeEventBoundedMemory: a 50 MB event with the default 16
// MiB limit fails cleanly without buffering the whole event.
func TestSSEReaderHugeEventBoundedMemory(t *testing.T) {
	body := io.MultiReader(strings.NewReader("data: "), &repeatReader{n: 50 << 20})
	sr := NewStreamReader(body, FormatSSE, Limits{}, nil)
	_, _, err := sr.Next()
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("Next() error = %v, want ErrEventTooLarge", err)
	}
	if c := cap(sr.buf); c > DefaultMaxEventBytes+64 {
		t.Errorf("buffer grew to %d bytes, want at most %d", c, DefaultMaxEventBytes+64)
	}
	if sr.BytesRead() > DefaultMaxEventBytes+64 {
		t.Errorf("read %d bytes before failing, want at most the limit", sr.BytesRead())
	}
}

type repeatReader struct{ n int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// fuzzDecode checks a decoder on arbitrary data: no panic, and any text it
// returns came out of valid JSON (encoding/json agrees the data parses).
func fuzzDecode(f *testing.F, backend string) {
	b, err := NewBackend(backend)
	if err != nil {
		f.Fatal(err)
	}
	for _, tr := range seedTranscripts(f, backend) {
		sr := NewStreamReader(bytes.NewReader(tr), FormatAuto, Limits{}, nil)
		for {
			ev, _, err := sr.Next()
			if err != nil {
				break
			}
			f.Add(bytes.Clone(ev.Data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := b.Decode(SSEEvent{Data: data})
		if err != nil {
			return
		}
		if d.Done {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Decode(%q) accepted invalid JSON: %+v", data, d)
		}
		if !d.HasUsage() && d.Usage != (Usage{}) {
			t.Fatalf("Decode(%q) returned usage without a source", data)
		}
		// A stated timing is recorded only when it can be one: no
		// duration below zero or beyond a day, whatever the server sent.
		st := d.Server
		for _, v := range []time.Duration{st.TotalDuration, st.LoadDuration, st.PromptEvalDuration, st.EvalDuration, st.FirstToken, st.QueueDuration} {
			if v < 0 || v > maxPhase {
				t.Fatalf("Decode(%q) stated server timings %+v: a duration out of [0, %v]", data, st, maxPhase)
			}
		}
	})
}

func FuzzDecodeSGLang(f *testing.F)            { fuzzDecode(f, "sglang") }
func FuzzDecodeOpenAICompletions(f *testing.F) { fuzzDecode(f, "vllm") }
func FuzzDecodeOpenAIChat(f *testing.F)        { fuzzDecode(f, "vllm-chat") }
func FuzzDecodeTRT(f *testing.F)               { fuzzDecode(f, "trt") }
func FuzzDecodeTruss(f *testing.F)             { fuzzDecode(f, "truss") }
func FuzzDecodeOllama(f *testing.F)            { fuzzDecode(f, "ollama") }
func FuzzDecodeOllamaChat(f *testing.F)        { fuzzDecode(f, "ollama-chat") }
func FuzzDecodeOpenAIResponses(f *testing.F)   { fuzzDecode(f, "openai-responses") }
func FuzzDecodeAnthropic(f *testing.F)         { fuzzDecode(f, "anthropic") }
func FuzzDecodeEmbeddings(f *testing.F)        { fuzzDecode(f, "openai-embeddings") }
