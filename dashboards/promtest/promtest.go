// Package promtest runs a real Prometheus on loopback for integration tests
// and executes every query of servingprobe's Grafana dashboards against it.
//
// It exists because Grafana cannot run here: the only proof that a panel
// shows data on import is to run its exact PromQL, with the Grafana variables
// substituted, against a Prometheus that scraped the exporter, once with
// native histograms on and once off. It is a test helper: Start takes a
// testing.TB and stops Prometheus in t.Cleanup.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ScrapeTarget is one scrape job with a single target.
type ScrapeTarget struct {
	Job string
	URL string // e.g. http://127.0.0.1:9123/metrics
}

// Config configures the Prometheus under test.
type Config struct {
	// Binary is the prometheus executable. Tests find it with
	// testkit/external.Program, which skips where it is not installed
	// (this package, outside testkit/, cannot import it).
	Binary  string
	Targets []ScrapeTarget
	// NativeHistograms starts Prometheus with --enable-feature=native-histograms.
	// Prometheus 2.42 then ingests only the native form of a histogram that
	// also has classic buckets.
	NativeHistograms bool
	// RuleFiles are absolute paths of rule files to load.
	RuleFiles []string
	// ScrapeInterval and EvaluationInterval default to 1s.
	ScrapeInterval, EvaluationInterval time.Duration
	// StartTimeout bounds the wait for /-/ready; default 30s.
	StartTimeout time.Duration
	// Alertmanagers are host:port addresses Prometheus sends alerts to.
	Alertmanagers []string
}

// Server is a running Prometheus.
type Server struct {
	URL    string // http://127.0.0.1:port
	client *http.Client
	log    *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Log returns what Prometheus wrote to stderr so far.
func (s *Server) Log() string { return s.log.String() }

// Start runs Prometheus in a temporary directory on a free loopback port and
// waits until it is ready. cfg.Binary must name it: a test finds it with
// testkit/external.Program, whose skip `make test` turns into a failure.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Binary == "" {
		t.Fatal("promtest.Config.Binary is empty: find prometheus with external.Program(t, \"prometheus\")")
	}
	path, err := exec.LookPath(cfg.Binary)
	if err != nil {
		t.Fatalf("prometheus binary: %v", err)
	}
	if cfg.ScrapeInterval == 0 {
		cfg.ScrapeInterval = time.Second
	}
	if cfg.EvaluationInterval == 0 {
		cfg.EvaluationInterval = time.Second
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	dir := t.TempDir()
	conf, err := configYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--config.file=" + confPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	if cfg.NativeHistograms {
		args = append(args, "--enable-feature=native-histograms")
	}
	s := &Server{URL: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}, log: &lockedBuffer{}}
	cmd := exec.Command(path, args...)
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	deadline := time.Now().Add(cfg.StartTimeout)
	for {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited before ready: %v\n%s", err, s.Log())
		default:
		}
		resp, err := s.client.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after %v: %v\n%s", cfg.StartTimeout, err, s.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func configYAML(cfg Config) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", promDuration(cfg.ScrapeInterval), promDuration(cfg.EvaluationInterval))
	if len(cfg.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range cfg.RuleFiles {
			fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
		}
	}
	if len(cfg.Alertmanagers) > 0 {
		b.WriteString("alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [")
		for i, a := range cfg.Alertmanagers {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(a))
		}
		b.WriteString("]\n")
	}
	b.WriteString("scrape_configs:\n")
	for _, tg := range cfg.Targets {
		u, err := url.Parse(tg.URL)
		if err != nil {
			return "", fmt.Errorf("scrape target %q: %w", tg.URL, err)
		}
		path := u.Path
		if path == "" {
			path = "/metrics"
		}
		fmt.Fprintf(&b, "  - job_name: %s\n    scheme: %s\n    metrics_path: %s\n    static_configs:\n      - targets: [%s]\n",
			strconv.Quote(tg.Job), u.Scheme, strconv.Quote(path), strconv.Quote(u.Host))
		if q := u.Query(); len(q) > 0 {
			b.WriteString("    params:\n")
			for k, vs := range q {
				fmt.Fprintf(&b, "      %s: [", strconv.Quote(k))
				for i, v := range vs {
					if i > 0 {
						b.WriteString(", ")
					}
					b.WriteString(strconv.Quote(v))
				}
				b.WriteString("]\n")
			}
		}
	}
	return b.String(), nil
}

func promDuration(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Result counts what a query returned. Native-histogram samples come back in
// their own fields of the API response and are counted apart.
type Result struct {
	Series     int
	Floats     int
	Histograms int
	// NaN counts the float samples (among Floats) that are NaN, such as
	// histogram_quantile over a window without observations. Grafana draws
	// nothing for them.
	NaN int
	// Inf counts the float samples (among Floats) that are +Inf or -Inf,
	// such as histogram_quantile whose rank falls in the +Inf bucket: a
	// panel draws them off its scale, so a query that should have a
	// number does not.
	Inf int
}

// Empty reports whether the query returned no sample at all.
func (r Result) Empty() bool { return r.Floats+r.Histograms == 0 }

// HasValues reports whether the query returned at least one sample that a
// panel can draw: a native histogram or a float that is not NaN.
func (r Result) HasValues() bool { return r.Floats-r.NaN+r.Histograms > 0 }

// Finite reports whether the query returned at least one sample and every
// float among them is a finite number (neither NaN nor infinite).
func (r Result) Finite() bool { return !r.Empty() && r.NaN == 0 && r.Inf == 0 }

// sampleValue returns the value of a [timestamp, "value"] sample pair.
func sampleValue(raw json.RawMessage) string {
	var pair [2]any
	if json.Unmarshal(raw, &pair) != nil {
		return ""
	}
	s, _ := pair[1].(string)
	return s
}

// count adds one float sample to r.
func (r *Result) count(raw json.RawMessage) {
	r.Floats++
	switch sampleValue(raw) {
	case "NaN":
		r.NaN++
	case "+Inf", "-Inf":
		r.Inf++
	}
}

type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric     map[string]string `json:"metric"`
			Value      json.RawMessage   `json:"value"`
			Values     []json.RawMessage `json:"values"`
			Histogram  json.RawMessage   `json:"histogram"`
			Histograms []json.RawMessage `json:"histograms"`
		} `json:"result"`
	} `json:"data"`
}

func (s *Server) api(ctx context.Context, path string, form url.Values) (Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.client.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Result{}, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Result{}, fmt.Errorf("decode %s response (HTTP %d): %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return Result{}, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	var res Result
	for _, series := range r.Data.Result {
		res.Series++
		if len(series.Value) > 0 {
			res.count(series.Value)
		}
		if len(series.Histogram) > 0 {
			res.Histograms++
		}
		for _, v := range series.Values {
			res.count(v)
		}
		res.Histograms += len(series.Histograms)
	}
	if r.Data.ResultType == "scalar" && len(r.Data.Result) == 0 {
		res.Floats = 1
	}
	return res, nil
}

// Query runs an instant query.
func (s *Server) Query(ctx context.Context, expr string, ts time.Time) (Result, error) {
	return s.api(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(ts)}})
}

// QueryRange runs a range query, as Grafana does for time series panels.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (Result, error) {
	return s.api(ctx, "/api/v1/query_range", url.Values{
		"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

// QueryValue runs an instant query that must return exactly one float sample
// and returns its value.
func (s *Server) QueryValue(ctx context.Context, expr string) (float64, error) {
	form := url.Values{"query": {expr}, "time": {unix(time.Now())}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/query", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, errors.New(r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d series, want 1", expr, len(r.Data.Result))
	}
	str, ok := r.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("%s: not a float sample", expr)
	}
	return strconv.ParseFloat(str, 64)
}

// WaitFor polls an instant query until it returns data or ctx ends.
func (s *Server) WaitFor(ctx context.Context, expr string) error {
	var last error
	for {
		r, err := s.Query(ctx, expr, time.Now())
		if err == nil && !r.Empty() {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", expr, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", expr, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func unix(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// CheckHistogramMode fails t unless Prometheus ingested exactly one form of
// the histogram metric: 2.42 keeps only the native form when native
// histograms are on, and only the classic buckets when they are off. It
// proves that a test really ran in the mode it claims. It reads the raw
// samples of the last minute, not the instant: with a 1s scrape interval
// (and so timeout), one scrape of a busy exporter that timed out marks
// every series stale, and an instant query then finds neither form.
// (Prometheus 2.42's last_over_time drops native histograms.)
func (s *Server) CheckHistogramMode(ctx context.Context, t testing.TB, metric string, native bool) {
	t.Helper()
	classic, err := s.Query(ctx, metric+"_bucket[1m]", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nat, err := s.Query(ctx, metric+"[1m]", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if native && (!classic.Empty() || nat.Histograms == 0) {
		t.Fatalf("native mode: %d classic bucket series, %d native histograms of %s; want 0 and >0", classic.Series, nat.Histograms, metric)
	}
	if !native && (classic.Empty() || !nat.Empty()) {
		t.Fatalf("classic mode: %d classic bucket series, %d native samples of %s; want >0 and 0", classic.Series, nat.Histograms+nat.Floats, metric)
	}
}
