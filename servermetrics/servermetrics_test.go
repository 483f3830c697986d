package servermetrics

import (
	"bytes"
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, path string) *Snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Parse(%s) = %v", path, err)
	}
	return s
}

func TestParseVLLM(t *testing.T) {
	s := mustParse(t, "testdata/vllm.txt")
	wantCounters := map[string]float64{
		"vllm:prefix_cache_queries": 1000, "vllm:prefix_cache_hits": 250, "vllm:num_preemptions": 2,
		"vllm:prompt_tokens": 1000, "vllm:generation_tokens": 500,
	}
	if diff := cmp.Diff(wantCounters, s.Counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	v := GaugeValues(s)
	// The current name wins over the deprecated alias beside it.
	if diff := cmp.Diff(map[Kind]float64{Running: 3, Waiting: 1, KVUsage: 0.25}, v); diff != "" {
		t.Errorf("GaugeValues (-want +got):\n%s", diff)
	}
	h := s.Histograms["vllm:time_to_first_token_seconds"]
	if h.Count != 10 || len(h.Buckets) != 4 || !math.IsInf(h.Buckets[3].UpperBound, 1) {
		t.Errorf("TTFT histogram = %+v", h)
	}
	if diff := cmp.Diff([]string{"vllm:iteration_tokens_total"}, s.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
}

func TestParseSGLang(t *testing.T) {
	s := mustParse(t, "testdata/sglang.txt")
	// Two tensor-parallel ranks: requests add up, KV usage averages.
	if diff := cmp.Diff(map[Kind]float64{Running: 8, Waiting: 2, KVUsage: 0.4}, GaugeValues(s)); diff != "" {
		t.Errorf("GaugeValues (-want +got):\n%s", diff)
	}
	r := Compute(&Snapshot{}, s, nil)
	if r.Engine != "sglang" || r.PrefixHitRate != 0.25 {
		t.Errorf("Compute: engine %q, hit rate %v; want sglang, 0.25", r.Engine, r.PrefixHitRate)
	}
	if diff := cmp.Diff([]string{"sglang:gen_throughput"}, s.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	bs := []Bucket{{0.04, 0}, {0.06, 6}, {0.08, 10}, {inf, 10}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []Bucket
		want    Estimate
		ok      bool
	}{
		{"median in the second bucket", 0.5, bs, Estimate{0.04 + 0.02*5.0/6, 0.04, 0.06}, true},
		{"p90 in the third", 0.9, bs, Estimate{0.06 + 0.02*3.0/4, 0.06, 0.08}, true},
		{"first bucket starts at 0", 0.5, []Bucket{{1, 4}, {inf, 4}}, Estimate{0.5, 0, 1}, true},
		{"rank in +Inf returns the last finite bound", 0.99, []Bucket{{1, 1}, {inf, 10}}, Estimate{1, 1, inf}, true},
		{"falling counts are raised", 0.5, []Bucket{{1, 4}, {2, 3}, {inf, 4}}, Estimate{0.5, 0, 1}, true},
		{"no observations", 0.5, []Bucket{{1, 0}, {inf, 0}}, Estimate{}, false},
		{"no +Inf bucket", 0.5, []Bucket{{1, 4}}, Estimate{}, false},
		{"empty", 0.5, nil, Estimate{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Quantile(tc.q, tc.buckets)
			if ok != tc.ok || math.Abs(got.Value-tc.want.Value) > 1e-12 || got.Lower != tc.want.Lower || got.Upper != tc.want.Upper {
				t.Errorf("Quantile(%v, %v) = %+v, %v, want %+v, %v", tc.q, tc.buckets, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCompute(t *testing.T) {
	start := mustParse(t, "testdata/vllm.txt")
	endText, _ := os.ReadFile("testdata/vllm.txt")
	// The run adds 10 TTFTs, all in (0.06, 0.08], 100 prompt tokens of
	// which 50 hit the cache, and one preemption.
	e := strings.NewReplacer(
		`le="0.08",model_name="m"} 10.0`, `le="0.08",model_name="m"} 20.0`,
		`le="+Inf",model_name="m"} 10.0`, `le="+Inf",model_name="m"} 20.0`,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 10.0`, `vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 20.0`,
		`vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.6`, `vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.3`,
		`vllm:prompt_tokens_total{engine="0",model_name="m"} 1000.0`, `vllm:prompt_tokens_total{engine="0",model_name="m"} 1100.0`,
		`vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0`, `vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1100.0`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0`, `vllm:prefix_cache_hits_total{engine="0",model_name="m"} 300.0`,
		`vllm:num_preemptions_total{engine="0",model_name="m"} 2.0`, `vllm:num_preemptions_total{engine="0",model_name="m"} 3.0`,
		`vllm:generation_tokens_total{engine="0",model_name="m"} 500.0`, `vllm:generation_tokens_total{engine="0",model_name="m"} 400.0`,
	).Replace(string(endText))
	end, err := Parse(strings.NewReader(e))
	if err != nil {
		t.Fatal(err)
	}
	samples := []Sample{
		{0, map[Kind]float64{Running: 0, KVUsage: 0.1}},
		{time.Second, map[Kind]float64{Running: 8, Waiting: 3, KVUsage: 0.7}},
		{2 * time.Second, map[Kind]float64{Running: 4, Waiting: 0, KVUsage: 0.4}},
	}
	r := Compute(start, end, samples)
	if r.Engine != "vllm" || r.Missing != "" {
		t.Fatalf("Compute: engine %q, missing %q", r.Engine, r.Missing)
	}
	l, ok := r.Latency(TTFT)
	if !ok || l.Count != 10 || math.Abs(l.Mean-0.07) > 1e-9 || math.Abs(l.P50.Value-0.07) > 1e-9 || l.P50.Lower != 0.06 || l.P50.Upper != 0.08 {
		t.Errorf("TTFT = %+v, want 10 observations, mean and p50 70 ms in (60, 80] ms", l)
	}
	for k, want := range map[Kind]float64{PromptTokens: 100, PrefixQueries: 100, PrefixHits: 50, Preemptions: 1} {
		if got, _ := r.Count(k); got != want {
			t.Errorf("Count(%s) = %v, want %v", k, got, want)
		}
	}
	if _, ok := r.Count(GenerationTokens); ok {
		t.Errorf("a counter that fell is read")
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "vllm:generation_tokens not read: it fell") {
		t.Errorf("Notes = %q", r.Notes)
	}
	if r.PrefixHitRate != 0.5 {
		t.Errorf("PrefixHitRate = %v, want 0.5", r.PrefixHitRate)
	}
	g, _ := r.Gauge(KVUsage)
	if g.Peak != 0.7 || math.Abs(g.Mean-0.4) > 1e-9 || g.Samples != 3 || g.Metric != "vllm:kv_cache_usage_perc" {
		t.Errorf("KV usage = %+v, want peak 0.7, mean 0.4 over 3 samples", g)
	}
	if g, _ := r.Gauge(Waiting); g.Peak != 3 || g.Samples != 2 {
		t.Errorf("waiting = %+v, want peak 3 over the 2 samples that had it", g)
	}
}

func TestComputeNoEngine(t *testing.T) {
	s, err := Parse(strings.NewReader("process_cpu_seconds_total 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := Compute(s, s, nil); r.Missing == "" {
		t.Errorf("Compute of an endpoint without engine metrics has no Missing")
	}
}

func metricsServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// TestWatchFailSoft: an endpoint that is absent, slow, huge or garbage
// gives a Report that says why, within the timeout, and never an error.
func TestWatchFailSoft(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := metricsServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	huge := metricsServer(t, func(w http.ResponseWriter, r *http.Request) {
		line := []byte("vllm:num_requests_running 1\n")
		for range 1 << 14 {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	// declared states its length, over the cap, and then never sends the
	// body: the read ends on the stated length, not on the timeout.
	declared := metricsServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	garbage := metricsServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>not metrics</html>\x00{\n"))
	})
	notFound := metricsServer(t, http.NotFound)
	for _, tc := range []struct{ name, url, want string }{
		{"absent", refused, "connection refused"},
		{"slow", slow, "no answer within 200ms"},
		{"huge", huge, "exceeds the size cap of 65536 bytes"},
		{"huge, its length stated", declared, "exceeds the size cap of 65536 bytes"},
		{"garbage", garbage, "parse metrics"},
		{"not found", notFound, "404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The slow case's reason names the timeout that bounded it: a
			// read that waited on the server would say otherwise.
			w := Start(t.Context(), tc.url, Options{Timeout: 200 * time.Millisecond, MaxBytes: 64 << 10, Interval: 10 * time.Millisecond})
			r := w.Stop(t.Context(), 1)
			if !strings.Contains(r.Missing, tc.want) || r.Source != tc.url {
				t.Errorf("Report.Missing = %q, want it to contain %q", r.Missing, tc.want)
			}
		})
	}
}

// TestWatchHidesPassword: an endpoint's password, its only credential,
// is in no Report, whether the read works or the server refuses it: the
// Source and the reason show the URL redacted.
func TestWatchHidesPassword(t *testing.T) {
	const secret = "pw"
	vllm, err := os.ReadFile("testdata/vllm.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"read", func(w http.ResponseWriter, r *http.Request) {
			if _, p, _ := r.BasicAuth(); p != secret {
				t.Errorf("the server got password %q, want %q", p, secret)
			}
			w.Write(vllm)
		}},
		{"refused", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := strings.Replace(metricsServer(t, tc.h), "http://", "http://probe:"+secret+"@", 1)
			r := Start(t.Context(), u, Options{Timeout: 5 * time.Second, Interval: time.Hour}).Stop(t.Context(), 0)
			if want := strings.Replace(u, ":"+secret+"@", ":xxxxx@", 1); r.Source != want {
				t.Errorf("Source %q, want %q", r.Source, want)
			}
			if tc.name == "refused" && !strings.Contains(r.Missing, "401") {
				t.Errorf("Missing %q, want the 401", r.Missing)
			}
			if strings.Contains(r.Source+r.Missing, ":"+secret+"@") {
				t.Errorf("the report shows the password: %q, %q", r.Source, r.Missing)
			}
		})
	}
}

// TestWatch samples a live endpoint and waits at the end for the server
// to count the run's requests.
func TestWatch(t *testing.T) {
	var calls atomic.Int64
	url := metricsServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := int(min(calls.Add(1), 5)) // the server counts a request per read, up to 4 more than at the start
		w.Write([]byte("# TYPE vllm:e2e_request_latency_seconds histogram\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"1\"} " + itoa(n) + "\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} " + itoa(n) + "\n" +
			"vllm:e2e_request_latency_seconds_count " + itoa(n) + "\n" +
			"vllm:e2e_request_latency_seconds_sum 1\n" +
			"vllm:num_requests_waiting " + itoa(n) + "\n"))
	})
	w := Start(context.Background(), url, Options{Interval: time.Hour, Settle: 2 * time.Second})
	r := w.Stop(context.Background(), 4)
	l, ok := r.Latency(E2E)
	if r.Missing != "" || !ok || l.Count != 4 {
		t.Fatalf("Report = %+v, want 4 requests counted", r)
	}
	if g, _ := r.Gauge(Waiting); g.Peak != 5 || g.Samples != 2 {
		t.Errorf("waiting = %+v, want peak 5 over the start and end reads", g)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// FuzzParse: any input parses or fails with an error, and whatever parses
// computes a report without panicking or producing a quantile outside its
// bucket.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/vllm.txt", "testdata/sglang.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"NaN\"} 1\n"))
	f.Add([]byte("vllm:num_requests_running NaN\nvllm:prompt_tokens_total +Inf\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		r := Compute(&Snapshot{}, s, []Sample{{0, GaugeValues(s)}})
		for _, l := range r.Latencies {
			for _, e := range []Estimate{l.P50, l.P90, l.P99} {
				if l.Count > 0 && (e.Value < e.Lower || e.Value > e.Upper) && !math.IsNaN(e.Value) {
					t.Errorf("%s estimate %+v outside its bucket", l.Metric, e)
				}
			}
		}
	})
}
