package exporter

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTraceIDOnEverySurface: the daemon's probes each carry a valid W3C
// traceparent with a trace id of their own, and the trace id the server
// saw is the one in the history (/api/v1/results), in the histograms'
// exemplars (/metrics in OpenMetrics) and in /probe?debug=true.
func TestTraceIDOnEverySurface(t *testing.T) {
	sim := startSim(t)
	var (
		mu   sync.Mutex
		seen = map[string]bool{} // trace ids the server saw
		bad  []string
	)
	w3c := regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			vs := r.Header.Values("traceparent")
			mu.Lock()
			if m := []string(nil); len(vs) == 1 {
				if m = w3c.FindStringSubmatch(vs[0]); m != nil {
					if seen[m[1]] {
						bad = append(bad, "repeated "+vs[0])
					}
					seen[m[1]] = true
				}
			}
			if len(vs) != 1 || !w3c.MatchString(vs[0]) {
				bad = append(bad, strings.Join(vs, ", "))
			}
			mu.Unlock()
		}
		resp, err := http.DefaultTransport.RoundTrip(func() *http.Request {
			out := r.Clone(r.Context())
			out.RequestURI = ""
			out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(sim, "http://")
			return out
		}())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(capture.Close)

	f := newFixtureAt(t, false, capture.URL)
	m := f.d.Metrics()
	waitFor(t, "3 successes", func() bool {
		return testutil.ToFloat64(m.requests.WithLabelValues("sim", "short", "servingprobe-sim", "probe", "success")) >= 3
	})

	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(b)
	// The history is read after the scrape, so that it holds every
	// result an exemplar came from.
	_, body := f.get("/api/v1/results?target=sim")
	var res struct{ Results []HistoryEntry }
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}

	_, debug := f.get("/probe?target=sim&module=short&debug=true")
	mu.Lock()
	defer mu.Unlock()
	if m := regexp.MustCompile(`(?m)^trace_id: ([0-9a-f]{32})$`).FindStringSubmatch(debug); m == nil || !seen[m[1]] {
		t.Errorf("/probe?debug=true states no trace_id the server saw:\n%s", debug)
	}
	if len(bad) > 0 {
		t.Errorf("requests without one valid traceparent of their own: %q", bad)
	}
	if len(res.Results) < 3 {
		t.Fatalf("history holds %d results of sim, want at least 3", len(res.Results))
	}
	for _, e := range res.Results {
		if !seen[e.TraceID] {
			t.Errorf("history entry %d has trace_id %q, not one the server saw", e.ID, e.TraceID)
		}
	}
	ex := regexp.MustCompile(`servingprobe_time_to_first_token_seconds_bucket\{[^}]*target="sim"[^}]*\} \d+ # \{([^}]*)\}`)
	found := ex.FindAllStringSubmatch(metrics, -1)
	if len(found) == 0 {
		t.Fatalf("no TTFT exemplar of sim in the OpenMetrics exposition:\n%s", metrics)
	}
	label := regexp.MustCompile(`(?:^|,)trace_id="([0-9a-f]{32})"`)
	for _, f := range found {
		l := label.FindStringSubmatch(f[1])
		if l == nil || !seen[l[1]] {
			t.Errorf("exemplar {%s}: want a trace_id the server saw", f[1])
		}
	}
	// Each exemplar is a result's: its trace id is in the history too.
	inHistory := true
	for _, f := range found {
		if l := label.FindStringSubmatch(f[1]); l != nil {
			in := false
			for _, e := range res.Results {
				in = in || e.TraceID == l[1]
			}
			inHistory = inHistory && in
		}
	}
	if !inHistory {
		t.Errorf("an exemplar's trace id is not in the history")
	}
}

// TestExemplarLabels: the exemplar carries the request id and the trace
// id, the request id cut so that the label set stays within the 128
// runes an exemplar may have (ObserveWithExemplar panics beyond).
func TestExemplarLabels(t *testing.T) {
	const trace = "0af7651916cd43dd8448eb211c80319c"
	long := strings.Repeat("é", 200)
	for _, tc := range []struct {
		id, trace string
		want      prometheus.Labels
	}{
		{"", "", nil},
		{"sp-1", "", prometheus.Labels{"request_id": "sp-1"}},
		{"", trace, prometheus.Labels{"trace_id": trace}},
		{"sp-1", trace, prometheus.Labels{"request_id": "sp-1", "trace_id": trace}},
		{long, trace, prometheus.Labels{"request_id": strings.Repeat("é", maxExemplarIDRunes), "trace_id": trace}},
	} {
		got := exemplarOf(tc.id, tc.trace)
		if !maps.Equal(got, tc.want) {
			t.Errorf("exemplarOf(%.12q, %q) = %v, want %v", tc.id, tc.trace, got, tc.want)
		}
		runes := 0
		for k, v := range got {
			runes += utf8.RuneCountInString(k) + utf8.RuneCountInString(v)
		}
		if runes > 128 {
			t.Errorf("exemplarOf(%.12q, %q) has %d runes, over 128", tc.id, tc.trace, runes)
		}
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
		observe(h, 1, got) // panics beyond the limit
	}
}
