package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// TestPrintRequestsGolden: the start line and two end lines (a success
// and an HTTP error) of one fixed request are what bench_serving prints
// for it. testdata/print_requests.golden was written by CPython 3 itself:
// its f-strings and the str() of the RequestFuncInput and
// RequestFuncOutput dataclasses, declared as in sglang's
// python/sglang/benchmark/serving.py at 00f9ec47, holding the same values
// (it is not an output of this code, and there is no -update for it).
// It covers repr's choice of quotes, its escapes, float and big-int forms,
// None/True/False, nested dicts and lists, and the order of
// extra_request_body's keys: the user's (sorted, as written in the JSON
// given to Python), the --fake-prefill fields, then the row's own.
func TestPrintRequestsGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/print_requests.golden")
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSpec()
	s.Backend, s.BaseURL, s.FakePrefill = "sglang-oai-chat", "http://127.0.0.1:30000", true
	s.ExtraBody = mustJSONObject(t, `{"stop": ["it's", "say \"hi\""], "temperature": 0.7, "tiny": 1e-05, "huge": 1e16, "n": 12345678901234567890, "opts": {"c": "tab\there", "b": true, "a": null}}`)
	info, err := prober.LookupBackend(s.Backend)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	run := bench.RequestLogRun{APIURL: s.BaseURL + info.Path, Model: "Qwen/Qwen2.5-0.5B-Instruct", Extra: runExtraFields(s, info),
		Stream: true, PerChunk: true, TextChunks: true, CacheReport: true, Origin: t0.Add(500*time.Millisecond - 100*time.Second)}
	p := datasets.Prompt{Text: "the real prompt", PromptLen: 12, OutputLen: 32, RoutingKey: "grp_3", ExtraBody: map[string]any{"seed": 7}}
	text := "Hello, it's \"me\"\n€"
	sent := t0.Add(500 * time.Millisecond)
	ok := prober.Result{Stream: true, Sent: sent, FirstToken: sent.Add(125 * time.Millisecond), End: sent.Add(1500 * time.Millisecond),
		Events: []prober.Event{
			{At: sent.Add(125 * time.Millisecond), Tokens: 1, TextEnd: len("Hello")},
			{At: sent.Add(250 * time.Millisecond), Tokens: 1, TextEnd: len("Hello, it's ")},
			{At: sent.Add(312500 * time.Microsecond), Tokens: 1, TextEnd: len(text)},
		},
		GeneratedText: text, OutputTokens: 3, OutputTokensSource: prober.TokenSourceUsage,
		InputTokens: 20, InputTokensSource: prober.TokenSourceUsage,
		CachedTokens: 8, CacheDetails: &prober.CacheDetails{Device: 8},
		Outcome: prober.OutcomeSuccess}
	bad := prober.Result{Stream: true, Sent: sent, End: sent.Add(time.Second), HTTPStatus: 503, Outcome: prober.OutcomeHTTP5xx,
		Err: "Service Unavailable: {\"detail\":\"it's down\"}\a"}
	rid := []byte("0f8e4c2a-6b1d-4e3f-9a7c-5d2b1e0f3a4c")
	start, end := 1700000000.5, 1700000001.75
	var got []byte
	got = bench.AppendRequestStart(got, rid, start, &run, &p)
	got = bench.AppendRequestEnd(got, rid, end, end-start, &run, &p, &ok)
	got = bench.AppendRequestEnd(got, rid, end, end-start, &run, &p, &bad)
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
			}
		}
	}
}

func mustJSONObject(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := decodeExtraForTest(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunExtraFieldsOrder: extra_request_body's keys come in
// bench_serving's insertion order: the user's, then
// return_cached_tokens_details (--cache-report on sglang-oai and
// sglang-oai-chat only), then bootstrap_host and bootstrap_room
// (--fake-prefill, every backend); a key the user gave keeps its place and
// takes the value bench_serving sets.
func TestRunExtraFieldsOrder(t *testing.T) {
	for _, tc := range []struct {
		backend     string
		user        map[string]any
		cache, fake bool
		want        string
	}{
		{"sglang-oai-chat", nil, false, false, "{}"},
		{"sglang-oai-chat", map[string]any{"b": 1, "a": 2}, true, true, "{'a': 2, 'b': 1, 'return_cached_tokens_details': True, 'bootstrap_host': '2.2.2.2', 'bootstrap_room': 0}"},
		{"sglang", nil, true, true, "{'bootstrap_host': '2.2.2.2', 'bootstrap_room': 0}"},
		{"vllm-chat", map[string]any{"bootstrap_room": 9, "z": "x"}, true, true, "{'bootstrap_room': 0, 'z': 'x', 'bootstrap_host': '2.2.2.2'}"},
		{"sglang-oai", map[string]any{"return_cached_tokens_details": false}, true, false, "{'return_cached_tokens_details': True}"},
	} {
		info, err := prober.LookupBackend(tc.backend)
		if err != nil {
			t.Fatal(err)
		}
		s := DefaultSpec()
		s.Backend, s.ExtraBody, s.CacheReport, s.FakePrefill = tc.backend, tc.user, tc.cache, tc.fake
		if got := string(pyfmt.AppendDict(nil, runExtraFields(s, info))); got != tc.want {
			t.Errorf("%s %v cache=%t fake=%t: %s, want %s", tc.backend, tc.user, tc.cache, tc.fake, got, tc.want)
		}
	}
}

// TestPrintRequestsSpecAccept: spec_accept_length is the server's only
// where bench_serving's request function reads it (/generate, and chat
// without streaming); its streaming chat function leaves it 0.0.
func TestPrintRequestsSpecAccept(t *testing.T) {
	for _, tc := range []struct {
		backend string
		stream  bool
		want    string
	}{
		{"sglang", true, "spec_accept_length=2.5,"},
		{"sglang-oai-chat", false, "spec_accept_length=2.5,"},
		{"sglang-oai-chat", true, "spec_accept_length=0.0,"},
		{"sglang-oai", true, "spec_accept_length=0.0,"},
	} {
		info, err := prober.LookupBackend(tc.backend)
		if err != nil {
			t.Fatal(err)
		}
		s := DefaultSpec()
		s.Backend, s.BaseURL, s.DisableStream = tc.backend, "http://s", !tc.stream
		run := newRequestLogRun(&Prepared{Spec: s, Info: info, Model: "m"})
		r := prober.Result{Outcome: prober.OutcomeSuccess, SpecAcceptLength: 2.5}
		if got := string(bench.AppendRequestEnd(nil, nil, 0, 0, &run, &datasets.Prompt{}, &r)); !strings.Contains(got, tc.want) {
			t.Errorf("%s stream=%t: %s, want %s", tc.backend, tc.stream, got, tc.want)
		}
	}
}

func decodeExtraForTest(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	err := dec.Decode(&m)
	return m, err
}
