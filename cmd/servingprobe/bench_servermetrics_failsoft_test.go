package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/servermetrics"
	"github.com/servingprobe/servingprobe/simulator"
)

// failsoftEndpoint is a --server-metrics endpoint that does not serve an
// engine's metrics. reads counts the requests it got; abandoned is
// closed when a handler returned, before the test's end, on a request
// whose client had gone (its context cancelled).
type failsoftEndpoint struct {
	url       string
	reads     *atomic.Int64
	abandoned chan struct{}
}

// serveFailsoft serves h on a loopback port until the test ends. The
// server is closed without waiting for its handlers, and release is
// closed first, so a handler that never answers ends with the test.
func serveFailsoft(t *testing.T, h func(w http.ResponseWriter, r *http.Request, release <-chan struct{})) failsoftEndpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := failsoftEndpoint{url: "http://" + ln.Addr().String() + "/metrics", reads: new(atomic.Int64), abandoned: make(chan struct{})}
	release := make(chan struct{})
	var once sync.Once
	reads, abandoned := ep.reads, ep.abandoned
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		h(w, r, release)
		select {
		case <-release: // the test ended first
		default:
			if r.Context().Err() != nil {
				once.Do(func() { close(abandoned) })
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	t.Cleanup(func() { close(release) }) // runs before Close
	return ep
}

// refusedURL is a /metrics URL on a port nothing listens on: a listener
// bound and closed, so the port was free a moment ago.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/metrics"
}

// failsoftRecord is what these tests read of bench's JSONL record.
type failsoftRecord struct {
	Completed         int `json:"completed"`
	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`
	Servingprobe      struct {
		Server     map[string]any   `json:"server"`
		ServerMore []map[string]any `json:"server_more"`
	} `json:"servingprobe"`
}

// failsoftBench runs bench against a fresh simulator with the given
// --server-metrics URLs (simMetrics in urls stands for the simulator's
// own /metrics) and checks what every failure case shares: bench exits
// 0 and every request of the run succeeded, as many as the simulator
// served (the warm-up request aside). It returns the record, the table
// and the log.
func failsoftBench(t *testing.T, urls ...string) (rec failsoftRecord, stdout, stderr string) {
	t.Helper()
	cfg := simulator.DefaultConfig()
	cfg.TTFT, cfg.TTFTJitter, cfg.ITL, cfg.ITLJitter = 2*time.Millisecond, 0, time.Millisecond, 0
	sim, base := serveSimulator(t, cfg)

	const prompts = 6
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"bench", "--backend", "vllm-chat", "--base-url", base, "--model", cfg.Model,
		"--dataset-name", "random", "--tokenizer", "../../tokenizer/testdata/qwen3",
		"--random-input-len", "32", "--random-output-len", "4", "--num-prompts", fmt.Sprint(prompts),
		"--request-rate", "inf", "--warmup-requests", "1",
		"--output-file", out, "--disable-tqdm", "--ready-check-timeout-sec", "10"}
	for _, u := range urls {
		if u == simMetrics {
			u = base + "/metrics"
		}
		args = append(args, "--server-metrics", u)
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), "Infinity", "null")), &rec); err != nil {
		t.Fatalf("record: %v\n%s", err, b)
	}
	if served := len(sim.Truths()) - 1; rec.Completed != prompts || served != prompts {
		t.Errorf("%d of %d requests completed, the simulator served %d besides the warm-up", rec.Completed, prompts, served)
	}
	if !regexp.MustCompile(`(?m)^Successful requests: +` + fmt.Sprint(prompts) + ` *$`).MatchString(stdout) {
		t.Errorf("the table does not say %d successful requests:\n%s", prompts, stdout)
	}
	return rec, stdout, stderr
}

// simMetrics stands for the simulator's own /metrics in failsoftBench's
// URLs (its port is known only once it listens).
const simMetrics = "sim"

// serverSections are the table's Server metrics sections, in order, each
// a map of its rows' labels to their values (padding trimmed). A section
// ends at the next heading ("-" centred title) or the table's end ("=").
func serverSections(stdout string) []map[string]string {
	var out []map[string]string
	var cur map[string]string
	row := regexp.MustCompile(`^(\S[^:]*:) +(.*?) *$`)
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "Server metrics") && strings.HasPrefix(line, "-") {
			cur = map[string]string{}
			out = append(out, cur)
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(line, "=") || strings.HasPrefix(line, "-") {
			cur = nil // the next section's heading or the table's end
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil {
			cur[m[1]] = m[2]
		}
	}
	return out
}

// TestBenchServerMetricsFailSoft: a --server-metrics endpoint that
// refuses, hangs, answers a body over the size cap, answers an error
// status, answers something that is not Prometheus text, or Prometheus
// text of no engine costs the run nothing: bench exits 0 with every
// request measured, and the Server metrics block, in the table and in
// the JSONL alike, names the endpoint and says why it was not read. The
// endpoint is read once (the start read) and never again: a Watch whose
// start read failed neither samples nor reads at the end.
//
// The hanging endpoint never answers until the test ends. That it does
// not hold the run is shown by order, not by a clock: bench returns while
// the endpoint still holds its one request, says the read had no answer
// within servermetrics.DefaultTimeout, logs that before "Benchmark
// started" (so the read was over before the measured run began and its
// wait is in no recorded duration), and closes the connection.
func TestBenchServerMetricsFailSoft(t *testing.T) {
	// Valid Prometheus text (comment lines), over the cap: the cap, not
	// the parser, refuses it. The body states its length, as an engine's
	// /metrics does, so the read refuses it on the header without
	// transferring 8 MiB: sent a line at a time, without a length, on a
	// machine busy with other work under -race, the read ran out of its
	// 2 s (servermetrics.DefaultTimeout) before it reached the cap. A
	// body cut at the cap as it is read is servermetrics' own test
	// (TestWatchFailSoft).
	line := "# " + strings.Repeat("x", 1021) + "\n"
	huge := []byte(strings.Repeat(line, servermetrics.DefaultMaxBytes/len(line)+1))
	hugeBody := func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
		_, _ = w.Write(huge) // fails once the client has gone
	}
	for _, tc := range []struct {
		name string
		// handler serves the endpoint; refused: nothing listens.
		handler func(w http.ResponseWriter, r *http.Request, release <-chan struct{})
		refused bool
		// missing checks the block's reason; url is the endpoint's.
		missing func(url, m string) bool
		want    string // the reason, as the failure message says it
		hangs   bool
		// parses: the reads succeed and the reason is found in them, so
		// the endpoint is read at the start and at the end (and sampled
		// between), and the warning comes after the run.
		parses bool
	}{
		{
			name: "refused", refused: true,
			missing: func(url, m string) bool { return strings.Contains(m, url) && strings.Contains(m, "connection refused") },
			want:    "the URL and connection refused",
		},
		{
			name: "hangs",
			handler: func(_ http.ResponseWriter, r *http.Request, release <-chan struct{}) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			},
			missing: func(_, m string) bool { return m == fmt.Sprintf("no answer within %s", servermetrics.DefaultTimeout) },
			want:    fmt.Sprintf("no answer within %s", servermetrics.DefaultTimeout),
			hangs:   true,
		},
		{
			name: "huge", handler: hugeBody,
			missing: func(_, m string) bool {
				return m == fmt.Sprintf("%v of %d bytes", servermetrics.ErrTooLarge, servermetrics.DefaultMaxBytes)
			},
			want: fmt.Sprintf("%v of %d bytes", servermetrics.ErrTooLarge, servermetrics.DefaultMaxBytes),
		},
		{
			name: "status",
			handler: func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				http.Error(w, "no metrics here", http.StatusNotFound)
			},
			missing: func(url, m string) bool { return m == "GET "+url+": 404 Not Found" },
			want:    "GET <url>: 404 Not Found",
		},
		{
			name: "garbage",
			handler: func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html><body>{\"not\": \"prometheus\"}</body></html>\n"))
			},
			missing: func(_, m string) bool { return strings.HasPrefix(m, "parse metrics: ") },
			want:    "parse metrics: ...",
		},
		{
			name: "no engine",
			handler: func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				_, _ = w.Write([]byte("# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.25\n"))
			},
			missing: func(_, m string) bool {
				return m == "the endpoint exposes no metric of a known engine ("+strings.Join(servermetrics.Engines, ", ")+")"
			},
			want:   "no metric of a known engine",
			parses: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own simulator and endpoint, and
			// asserts an order of events, not a time.
			t.Parallel()
			var ep failsoftEndpoint
			if tc.refused {
				ep = failsoftEndpoint{url: refusedURL(t)}
			} else {
				ep = serveFailsoft(t, tc.handler)
			}
			rec, stdout, stderr := failsoftBench(t, ep.url)

			sv := rec.Servingprobe.Server
			if sv["source"] != ep.url {
				t.Errorf("server.source = %v, want %s", sv["source"], ep.url)
			}
			m, _ := sv["missing"].(string)
			if !tc.missing(ep.url, m) {
				t.Errorf("server.missing = %q, want %s", m, tc.want)
			}
			if len(sv) != 2 || rec.Servingprobe.ServerMore != nil {
				t.Errorf("the block has more than its source and why it is missing: %v, more %v", sv, rec.Servingprobe.ServerMore)
			}
			secs := serverSections(stdout)
			if len(secs) != 1 || secs[0]["Source:"] != ep.url || secs[0]["Not read:"] != m {
				t.Errorf("table sections %v, want one with Source %s and Not read %q\n%s", secs, ep.url, m, stdout)
			}
			if len(secs) == 1 && len(secs[0]) != 2 {
				t.Errorf("a block not read shows more rows than Source and Not read: %v", secs[0])
			}
			if ep.reads != nil {
				if n := ep.reads.Load(); !tc.parses && n != 1 || tc.parses && n < 2 {
					t.Errorf("the endpoint got %d reads, want %s", n, map[bool]string{false: "the start read only", true: "the start and end reads at least"}[tc.parses])
				}
			}

			// The warning names the endpoint and the reason: before the
			// measured run starts when the start read failed, after it
			// when the reads found no engine.
			warn := regexp.MustCompile(`level=warn .*msg="Server metrics not read" url=` + regexp.QuoteMeta(ep.url) + ` why=`).FindStringIndex(stderr)
			started := strings.Index(stderr, `msg="Benchmark started"`)
			if warn == nil || started < 0 || (warn[0] > started) != tc.parses {
				t.Errorf("want the warning for %s logged %s \"Benchmark started\"; log:\n%s", ep.url, map[bool]string{false: "before", true: "after"}[tc.parses], stderr)
			}
			if tc.hangs {
				// bench has returned, and the handler only returns on
				// its own when the client closes the connection (release
				// is closed at cleanup). The bound is a deadlock guard.
				select {
				case <-ep.abandoned:
				case <-time.After(10 * time.Second):
					t.Errorf("the hanging read's connection was still open 10 s after bench returned")
				}
			}
		})
	}
}

// TestBenchServerMetricsOneBad: of two --server-metrics endpoints, one
// the simulator's /metrics and one refused, the good one's block is there
// whole (its token counters equal bench's totals) and the bad one is named
// with its reason, in the JSONL and the table, in either order.
func TestBenchServerMetricsOneBad(t *testing.T) {
	for _, goodFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("good first %t", goodFirst), func(t *testing.T) {
			t.Parallel() // each order has its own simulator
			bad := refusedURL(t)
			urls := []string{simMetrics, bad}
			if !goodFirst {
				urls = []string{bad, simMetrics}
			}
			rec, stdout, _ := failsoftBench(t, urls...)
			if len(rec.Servingprobe.ServerMore) != 1 {
				t.Fatalf("server_more = %v, want the second endpoint's block", rec.Servingprobe.ServerMore)
			}
			good, badBlock := rec.Servingprobe.Server, rec.Servingprobe.ServerMore[0]
			if !goodFirst {
				good, badBlock = badBlock, good
			}
			if badBlock["source"] != bad {
				t.Errorf("the bad block's source is %v, want %s", badBlock["source"], bad)
			}
			m, _ := badBlock["missing"].(string)
			if !strings.Contains(m, "connection refused") {
				t.Errorf("the bad block says %q, want connection refused", m)
			}
			if _, ok := good["missing"]; ok || good["engine"] != string(simulator.MetricsVLLM) {
				t.Errorf("the good block: %v, want the simulator's vllm metrics", good)
			}
			if good["prompt_tokens"] != float64(rec.TotalInputTokens) || good["generation_tokens"] != float64(rec.TotalOutputTokens) {
				t.Errorf("the good block counts %v prompt and %v generation tokens, bench %d and %d",
					good["prompt_tokens"], good["generation_tokens"], rec.TotalInputTokens, rec.TotalOutputTokens)
			}

			secs := serverSections(stdout)
			if len(secs) != 2 {
				t.Fatalf("%d Server metrics sections, want 2:\n%s", len(secs), stdout)
			}
			gs, bs := secs[0], secs[1]
			if !goodFirst {
				gs, bs = bs, gs
			}
			if bs["Source:"] != bad || bs["Not read:"] != m {
				t.Errorf("the bad section %v, want Source %s and Not read %q", bs, bad, m)
			}
			if _, ok := gs["Not read:"]; ok || gs["Engine:"] != string(simulator.MetricsVLLM) ||
				gs["Server prompt tokens:"] != fmt.Sprintf("%d (ours %d)", rec.TotalInputTokens, rec.TotalInputTokens) {
				t.Errorf("the good section %v, want the simulator's whole block", gs)
			}
		})
	}
}
