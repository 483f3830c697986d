package benchrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// TestFakePrefillBodies: --fake-prefill puts sglang's fake bootstrap fields
// at the top level of every sglang backend's request body, and an
// --extra-request-body can still replace them; other servers' bodies are
// left alone.
func TestFakePrefillBodies(t *testing.T) {
	for _, tc := range []struct {
		backend  string
		extra    map[string]any
		wantHost any
		wantRoom any
	}{
		{"sglang", nil, FakeBootstrapHost, 0.0},
		{"sglang-oai", nil, FakeBootstrapHost, 0.0},
		{"sglang-oai-chat", nil, FakeBootstrapHost, 0.0},
		{"sglang", map[string]any{"bootstrap_room": 7}, FakeBootstrapHost, 7.0},
		{"vllm", nil, nil, nil},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.backend, tc.extra), func(t *testing.T) {
			info, err := prober.LookupBackend(tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			s := DefaultSpec()
			s.Backend, s.BaseURL, s.FakePrefill, s.ExtraBody = tc.backend, "http://s", true, tc.extra
			be, err := prober.NewBackend(tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			req, err := be.NewRequest(requestOptions(s, info, "m"), datasets.Prompt{Text: "hi", PromptLen: 1, OutputLen: 4})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(req.Body)
			var body map[string]any
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if body["bootstrap_host"] != tc.wantHost || body["bootstrap_room"] != tc.wantRoom {
				t.Errorf("body %s: bootstrap_host %v, bootstrap_room %v; want %v, %v", b, body["bootstrap_host"], body["bootstrap_room"], tc.wantHost, tc.wantRoom)
			}
		})
	}
}

// TestRequestLogLines: every request started and ended from many
// goroutines gets its start line and its end line, in that order, all
// written by close. No wall-clock assertion is made here: BENCHMARKS.md
// has the simulator runs with and without --print-requests.
func TestRequestLogLines(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	l := newRequestLog(&buf, start)
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := datasets.Prompt{PromptLen: i, OutputLen: 8}
			id := l.started(p)
			now := time.Now()
			r := prober.Result{Sent: now, FirstToken: now.Add(time.Millisecond), End: now.Add(2 * time.Millisecond), Outcome: prober.OutcomeSuccess, OutputTokens: 8}
			if i%50 == 0 {
				r.Outcome, r.Err, r.FirstToken = prober.OutcomeHTTP5xx, "503 Service Unavailable", time.Time{}
			}
			l.ended(id, p, &r)
		}()
	}
	wg.Wait()
	l.close()
	startRe := regexp.MustCompile(`^\[request (\d+) start\] t=\d+\.\d{3} input_len=\d+ output_len=8$`)
	endRe := regexp.MustCompile(`^\[request (\d+) end\] t=\d+\.\d{3} input_len=\d+ output_len=8 success=(true|false) outcome=\w+( ttft_ms=\d+\.\d\d)? latency_ms=\d+\.\d\d output_tokens=\d+( error=".*")?$`)
	seen := map[string]int{} // id -> 1 after start, 2 after end
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for _, line := range lines {
		if m := startRe.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 0 {
				t.Errorf("second start line for request %s: %q", m[1], line)
			}
			seen[m[1]] = 1
			continue
		}
		if m := endRe.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 1 {
				t.Errorf("end line before the start line for request %s: %q", m[1], line)
			}
			seen[m[1]] = 2
			continue
		}
		t.Errorf("unexpected line %q", line)
	}
	if len(lines) != 2*n || len(seen) != n {
		t.Fatalf("%d lines for %d requests, want %d", len(lines), len(seen), 2*n)
	}
	for id, st := range seen {
		if st != 2 {
			t.Errorf("request %s has no end line", id)
		}
	}
}
