package prober

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/testkit/llmtest"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files")

// Replay timing for golden transcripts: the headers come back at once, the
// first event 100 ms after Sent, every further event 10 ms later.
const (
	goldenFirst = 100 * time.Millisecond
	goldenGap   = 10 * time.Millisecond
)

// transcriptMeta is the optional <case>.meta.json beside a transcript.
type transcriptMeta struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Stream      *bool  `json:"stream"`
}

// goldenResult is the part of a Result a golden file pins, with durations
// as strings and times as offsets from Sent.
type goldenResult struct {
	Outcome            Outcome       `json:"outcome"`
	Err                string        `json:"err,omitempty"`
	HTTPStatus         int           `json:"http_status"`
	FinishReason       string        `json:"finish_reason,omitempty"`
	TTFT               string        `json:"ttft"`
	E2E                string        `json:"e2e"`
	TPOT               string        `json:"tpot"`
	ChunkITLs          []string      `json:"chunk_itls"`
	ITLs               []string      `json:"itls"`
	Events             []goldenEvent `json:"events"`
	EventTokensSource  TokenSource   `json:"event_tokens_source"`
	InputTokens        int           `json:"input_tokens"`
	InputTokensSource  TokenSource   `json:"input_tokens_source,omitempty"`
	CachedTokens       int           `json:"cached_tokens,omitempty"`
	OutputTokens       int           `json:"output_tokens"`
	OutputTokensSource TokenSource   `json:"output_tokens_source,omitempty"`
	GeneratedText      string        `json:"generated_text"`
	SpecAcceptLength   float64       `json:"spec_accept_length,omitempty"`
	ServerTimings      ServerTimings `json:"server_timings,omitzero"`
	KeepAlives         int           `json:"keep_alives"`
	// The answer phase, written only for a request that reasoned, so the
	// transcripts of other requests keep their goldens.
	TTFAT                 string      `json:"ttfat,omitempty"`
	AnswerTPOT            string      `json:"answer_tpot,omitempty"`
	ReasoningTokens       int         `json:"reasoning_tokens,omitempty"`
	ReasoningTokensSource TokenSource `json:"reasoning_tokens_source,omitempty"`
	AnswerTokens          int         `json:"answer_tokens,omitempty"`
}

type goldenEvent struct {
	At        string `json:"at"`
	Tokens    int    `json:"tokens"`
	TextEnd   int    `json:"text_end"`
	Reasoning bool   `json:"reasoning,omitempty"`
}

// gaps renders ITL gaps as "gap/tokens", so a golden file shows how each
// gap was shared.
func gaps(r *Result, perChunk bool) []string {
	out := []string{}
	for g := range r.ITLGaps(perChunk) {
		out = append(out, fmt.Sprintf("%v/%d", g.Gap, g.Tokens))
	}
	return out
}

// secondsDuration rounds seconds to a Duration; -1 stays undefined.
func secondsDuration(s float64) time.Duration {
	if s < 0 {
		return -1
	}
	return time.Duration(math.Round(s * 1e9))
}

func durString(d time.Duration) string {
	if !Defined(d) {
		return "-"
	}
	return d.String()
}

func toGolden(r Result) goldenResult {
	sm := r.Samples()
	g := goldenResult{
		Outcome: r.Outcome, Err: r.Err, HTTPStatus: r.HTTPStatus, FinishReason: r.FinishReason,
		TTFT: durString(sm.TTFT), E2E: durString(sm.E2E), TPOT: durString(secondsDuration(sm.TPOTSeconds)),
		ChunkITLs: gaps(&r, true), ITLs: gaps(&r, false), Events: []goldenEvent{},
		EventTokensSource: r.EventTokensSource,
		InputTokens:       r.InputTokens, InputTokensSource: r.InputTokensSource, CachedTokens: r.CachedTokens,
		OutputTokens: r.OutputTokens, OutputTokensSource: r.OutputTokensSource,
		GeneratedText: r.GeneratedText, SpecAcceptLength: r.SpecAcceptLength, ServerTimings: r.Server, KeepAlives: r.KeepAlives,
	}
	for _, e := range r.Events {
		g.Events = append(g.Events, goldenEvent{At: e.At.Sub(r.Sent).String(), Tokens: e.Tokens, TextEnd: e.TextEnd, Reasoning: e.Reasoning})
	}
	if sm.Reasoning {
		g.TTFAT, g.AnswerTPOT = durString(sm.TTFAT), durString(secondsDuration(sm.AnswerTPOTSeconds))
		g.ReasoningTokens, g.ReasoningTokensSource, g.AnswerTokens = sm.ReasoningTokens, sm.ReasoningTokensSource, sm.AnswerTokens
	}
	return g
}

// splitLines splits a newline-delimited JSON transcript into its lines,
// keeping each terminator, so each line can be its own chunk.
func splitLines(transcript string) []string {
	return strings.SplitAfter(strings.TrimSuffix(transcript, "\n"), "\n")
}

// replay plays a transcript through the in-memory transport inside a
// synctest bubble, so every timestamp is an exact virtual time. A .ndjson
// transcript (ollama's native API) is served as application/x-ndjson, one
// line per chunk; a .sse one as text/event-stream, one event per chunk.
func replay(t *testing.T, backend string, transcript []byte, meta transcriptMeta, ndjson bool) Result {
	t.Helper()
	stream := meta.Stream == nil || *meta.Stream
	script := llmtest.Script{Status: meta.Status}
	if ndjson && meta.ContentType == "" {
		meta.ContentType = "application/x-ndjson"
	}
	if meta.ContentType != "" {
		script.Header = http.Header{"Content-Type": {meta.ContentType}}
	}
	switch {
	case !stream || meta.Status != 0:
		script.Chunks = []llmtest.Chunk{{Delay: goldenFirst, Data: string(transcript)}}
	case ndjson:
		script.Chunks = llmtest.SSE(goldenFirst, goldenGap, splitLines(string(transcript))...)
	default:
		script.Chunks = llmtest.SSE(goldenFirst, goldenGap, llmtest.SplitEvents(string(transcript))...)
	}
	return replayScript(t, backend, script, stream)
}

func TestGoldenTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.sse")
	ndjsonFiles, err2 := filepath.Glob("testdata/*/*.ndjson")
	if err != nil || err2 != nil || len(files) == 0 || len(ndjsonFiles) == 0 {
		t.Fatalf("no transcripts: %v %v", err, err2)
	}
	for _, f := range append(files, ndjsonFiles...) {
		backend := filepath.Base(filepath.Dir(f))
		ext := filepath.Ext(f)
		name := strings.TrimSuffix(filepath.Base(f), ext)
		t.Run(backend+"/"+name, func(t *testing.T) {
			transcript, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var meta transcriptMeta
			if b, err := os.ReadFile(strings.TrimSuffix(f, ext) + ".meta.json"); err == nil {
				if err := json.Unmarshal(b, &meta); err != nil {
					t.Fatal(err)
				}
			}
			r := replay(t, backend, transcript, meta, ext == ".ndjson")
			switch r.OutputTokensSource {
			case TokenSourceUsage, TokenSourceMetaInfo, TokenSourceProtocol:
				// Where the server states the output count, the per-event
				// counts behind the per-token ITL add up to it.
				if n := eventTokens(r.Events); len(r.Events) > 0 && n != r.OutputTokens {
					t.Errorf("%s: events carry %d tokens, the server counted %d (%s)", f, n, r.OutputTokens, r.OutputTokensSource)
				}
			}
			got := toGolden(r)
			goldenPath := strings.TrimSuffix(f, ext) + ".golden.json"
			if *updateGolden {
				b, _ := json.MarshalIndent(got, "", "  ")
				if err := os.WriteFile(goldenPath, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			var want goldenResult
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Result mismatch (-want +got):\n%s", f, diff)
			}
		})
	}
}
