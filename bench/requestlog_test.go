package bench

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// TestMultiTurnStreamOptions: a streamed multi-turn round's
// extra_request_body gains stream_options.include_usage = True, keeping
// a user's other options and an explicit include_usage, as
// wrap_multi_turn_request_func does.
func TestMultiTurnStreamOptions(t *testing.T) {
	for _, tc := range []struct {
		extra  map[string]any
		stream bool
		want   string
	}{
		{nil, true, "{'stream_options': {'include_usage': True}}"},
		{nil, false, "{}"},
		{map[string]any{"stream_options": map[string]any{"continuous_usage_stats": true}}, true, "{'stream_options': {'continuous_usage_stats': True, 'include_usage': True}}"},
		{map[string]any{"stream_options": map[string]any{"include_usage": false}}, true, "{'stream_options': {'include_usage': False}}"},
	} {
		// The run's own extra_request_body is the user's, sorted (the
		// run adds no keys here).
		run := RequestLogRun{Stream: tc.stream, Extra: pyfmt.SortedFields(tc.extra)}
		p := datasets.Prompt{MultiTurn: true}
		if got := string(pyfmt.AppendDict(nil, requestExtraFields(&run, &p))); got != tc.want {
			t.Errorf("extra %v stream %t: %s, want %s", tc.extra, tc.stream, got, tc.want)
		}
	}
}

// TestRequestLogLines: every request started and ended from many
// goroutines gets its start line and its end line, in that order, with
// the same rid, all written by Close; the rids are distinct version 4
// UUIDs. No wall-clock assertion is made here: BENCHMARKS.md has the
// simulator runs with and without --print-requests.
func TestRequestLogLines(t *testing.T) {
	var buf bytes.Buffer
	l := NewRequestLog(&buf, RequestLogRun{APIURL: "http://s/v1/chat/completions", Model: "m", Origin: time.Now()})
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := datasets.Prompt{PromptLen: i, OutputLen: 8}
			now := time.Now()
			id := l.Started(now, p)
			r := prober.Result{Stream: true, Sent: now, FirstToken: now.Add(time.Millisecond), End: now.Add(2 * time.Millisecond), Outcome: prober.OutcomeSuccess, OutputTokens: 8}
			if i%50 == 0 {
				r.Outcome, r.Err, r.FirstToken = prober.OutcomeHTTP5xx, "503 Service Unavailable", time.Time{}
			}
			l.Ended(id, r.End, p, &r)
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	const uuid4 = `([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})`
	const pyFloat = `\d+\.\d+(?:e[-+]\d\d)?`
	startRe := regexp.MustCompile(`^rid=` + uuid4 + ` time=` + pyFloat + ` message="request start" request_func_input="RequestFuncInput\(prompt='\.\.\.', api_url='http://s/v1/chat/completions', prompt_len=\d+, output_len=8, model='m', lora_name=None, image_data=None, extra_request_body=\{\}, timestamp=None, routing_key=None\)"$`)
	endRe := regexp.MustCompile(`^rid=` + uuid4 + ` time=` + pyFloat + ` time_delta=-?` + pyFloat + ` message="request end" output="RequestFuncOutput\(generated_text='\.\.\.', success=(True|False), latency=` + pyFloat + `, ttft=` + pyFloat + `, tpot=None, itl=\[\], text_chunks=\[\], prompt_len=\d+, error='[^']*', output_len=(8|0), start_time=` + pyFloat + `, cached_tokens=0, cached_tokens_details=None, spec_accept_length=0\.0, spec_cap_length=0\.0, spec_block_accept_length=0\.0, spec_cap_lens_histogram=\[\]\)"$`)
	seen := map[string]int{} // rid -> 1 after start, 2 after end
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	failed := 0
	for _, line := range lines {
		if m := startRe.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 0 {
				t.Errorf("second start line for rid %s: %q", m[1], line)
			}
			seen[m[1]] = 1
			continue
		}
		if m := endRe.FindStringSubmatch(line); m != nil {
			if seen[m[1]] != 1 {
				t.Errorf("end line before the start line for rid %s: %q", m[1], line)
			}
			seen[m[1]] = 2
			if m[2] == "False" {
				failed++
			}
			continue
		}
		t.Errorf("unexpected line %q", line)
	}
	if len(lines) != 2*n || len(seen) != n {
		t.Fatalf("%d lines for %d rids, want %d lines for %d", len(lines), len(seen), 2*n, n)
	}
	for rid, st := range seen {
		if st != 2 {
			t.Errorf("rid %s has no end line", rid)
		}
	}
	if failed != n/50 {
		t.Errorf("%d end lines say success=False, want %d", failed, n/50)
	}
}

// failingWriter accepts nothing: a closed stdout, a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestRequestLogWriteError: lines that could not be written are an error
// of Close, never dropped unseen.
func TestRequestLogWriteError(t *testing.T) {
	l := NewRequestLog(failingWriter{}, RequestLogRun{Model: "m", Origin: time.Now()})
	now := time.Now()
	id := l.Started(now, datasets.Prompt{})
	r := prober.Result{Sent: now, End: now, Outcome: prober.OutcomeSuccess}
	l.Ended(id, now, datasets.Prompt{}, &r)
	err := l.Close()
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "--print-requests") {
		t.Errorf("Close() = %v, want the write error, naming --print-requests", err)
	}
}

// TestRequestLogUnreadPipe: an output nobody reads (a pipe whose reader
// stalled) held every queued line, Result and all, and grew without end
// (50 MB to 131 MB in a minute of a real run); its Close then waited as
// long as the reader did. Now the queue stops taking requests past
// maxQueuedBytes and counts their lines as dropped, and Close returns
// once the output takes no line for closeWait, counting the lines left.
// Every request's start is paired with its end or dropped with it.
func TestRequestLogUnreadPipe(t *testing.T) {
	defer func(d time.Duration) { closeWait = d }(closeWait)
	closeWait = 50 * time.Millisecond
	pr, pw := io.Pipe()
	defer pr.Close() // ends the writer goroutine's write
	l := NewRequestLog(pw, RequestLogRun{Model: "m", Origin: time.Now()})
	now := time.Now()
	text := strings.Repeat("x", 64<<10)
	const n = 1000 // 64 MiB of text, four times the bound
	kept := 0
	for range n {
		id := l.Started(now, datasets.Prompt{})
		if id >= 0 {
			kept++
		}
		r := prober.Result{Sent: now, End: now, Outcome: prober.OutcomeSuccess, GeneratedText: text}
		l.Ended(id, now, datasets.Prompt{}, &r)
	}
	l.mu.Lock()
	queued := l.queuedBytes
	l.mu.Unlock()
	if queued > maxQueuedBytes+len(text)+4096 {
		t.Errorf("queue holds %d bytes, want at most about %d", queued, maxQueuedBytes)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close() = %v, want nil (nothing failed; lines were dropped)", err)
	}
	dropped := l.Dropped()
	if want := 2 * (n - kept); dropped < want || dropped > 2*n {
		t.Errorf("Dropped() = %d with %d of %d requests queued, want at least %d and at most %d", dropped, kept, n, want, 2*n)
	}
	if kept == n {
		t.Errorf("every request was queued, want the bound to drop some")
	}
}
