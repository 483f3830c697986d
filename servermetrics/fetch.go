package servermetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/config"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds each read: a healthy engine answers /metrics
	// in milliseconds, and the read at the start runs before the measured
	// requests, so a dead endpoint may delay the run's start by this much
	// and no more.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxBytes caps a body: vLLM's and sglang's expositions are
	// tens of kilobytes per engine, so 8 MiB holds hundreds of engines
	// while a runaway endpoint cannot fill the client's memory.
	DefaultMaxBytes = 8 << 20
	// DefaultInterval is how often the gauges are sampled during a run.
	DefaultInterval = time.Second
	// DefaultSettle is how long the read at the end waits for the server
	// to count the run's last requests (its histograms are updated after
	// it sends the last token, so the client can be first).
	DefaultSettle = time.Second
)

// ErrTooLarge is returned when a body exceeds the byte cap.
var ErrTooLarge = errors.New("the body exceeds the size cap")

// Fetch reads url and parses it. The caller's ctx bounds the time; c is
// the client (nil: a client of its own, so that the reads never take a
// connection from the measured requests' pool).
func Fetch(ctx context.Context, c *http.Client, url string, maxBytes int64) (*Snapshot, error) {
	if c == nil {
		c = defaultClient
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", config.RedactURL(url), resp.Status)
	}
	// A body whose stated length is over the cap is refused unread:
	// reading it up to the cap costs the transfer for nothing, and on a
	// busy host can outlast the read's deadline, which would then be
	// reported instead of the cap.
	if resp.ContentLength > maxBytes {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", config.RedactURL(url), err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, maxBytes)
	}
	return Parse(bytes.NewReader(body))
}

// defaultClient has a transport of its own: a read that hangs never holds
// a connection the benchmark's client needs. It follows redirects only on
// the endpoint's host, as the targets' clients do: the endpoint's URL may
// carry credentials.
var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	MaxIdleConnsPerHost: 1,
	IdleConnTimeout:     30 * time.Second,
}, CheckRedirect: config.CheckRedirect(10)}

// Options tune a Watch; zero values take the defaults.
type Options struct {
	Client   *http.Client
	Timeout  time.Duration
	MaxBytes int64
	Interval time.Duration
	Settle   time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	return o
}

// Watch reads an endpoint at the start of a run, samples its gauges
// through it on a goroutine of its own, and reads it again at the end.
type Watch struct {
	url     string
	o       Options
	start   *Snapshot
	missing string
	t0      time.Time
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	samples []Sample
	errs    int
}

// Start reads url once (bounded by the timeout) and, if it answered,
// starts sampling. It never fails: a Watch whose first read failed
// reports why in its Report's Missing and reads nothing more.
func Start(ctx context.Context, url string, o Options) *Watch {
	w := &Watch{url: url, o: o.withDefaults(), done: make(chan struct{})}
	rctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	s, err := Fetch(rctx, w.o.Client, url, w.o.MaxBytes)
	cancel()
	if err != nil {
		w.missing = why(err, w.o.Timeout)
		close(w.done)
		return w
	}
	w.start, w.t0 = s, time.Now()
	w.samples = []Sample{{Offset: 0, Values: GaugeValues(s)}}
	sctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go w.sample(sctx)
	return w
}

// Missing says why the first read failed ("" if it did not).
func (w *Watch) Missing() string { return w.missing }

func (w *Watch) sample(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
		s, err := Fetch(rctx, w.o.Client, w.url, w.o.MaxBytes)
		cancel()
		w.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				w.errs++
			}
		} else {
			w.samples = append(w.samples, Sample{Offset: time.Since(w.t0), Values: GaugeValues(s)})
		}
		w.mu.Unlock()
	}
}

// Stop ends the sampling and reads the endpoint at the end of the run.
// requests is how many requests the run completed: the end read is
// repeated, for up to the settle time, until the server's request
// histogram (E2E, else TTFT) has counted as many, so that the last
// requests are not missed because the client saw them end first.
func (w *Watch) Stop(ctx context.Context, requests int) Report {
	if w.cancel != nil {
		w.cancel()
	}
	<-w.done
	if w.start == nil {
		return Report{Source: config.RedactURL(w.url), Missing: w.missing, PrefixHitRate: nan()}
	}
	deadline := time.Now().Add(w.o.Settle)
	var end *Snapshot
	var err error
	for {
		rctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
		var s *Snapshot
		s, err = Fetch(rctx, w.o.Client, w.url, w.o.MaxBytes)
		cancel()
		if err == nil {
			end = s
			if counted(w.start, s) >= float64(requests) {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(w.o.Settle / 10):
		case <-ctx.Done():
		}
	}
	if end == nil {
		return Report{Source: config.RedactURL(w.url), Missing: "the read at the end failed: " + why(err, w.o.Timeout), PrefixHitRate: nan()}
	}
	w.mu.Lock()
	samples := append(w.samples, Sample{Offset: time.Since(w.t0), Values: GaugeValues(end)})
	errs := w.errs
	w.mu.Unlock()
	r := Compute(w.start, end, samples)
	r.Source, r.SampleErrors = config.RedactURL(w.url), errs
	return r
}

// counted is how many requests the server finished between two reads, by
// its E2E histogram, else its TTFT histogram; +Inf when it has neither
// (nothing to wait for).
func counted(start, end *Snapshot) float64 {
	for _, k := range []Kind{E2E, TTFT} {
		n, ok := pick(k, func(m string) bool { _, ok := end.Histograms[m]; return ok })
		if ok {
			return end.Histograms[n.Metric].Count - start.Histograms[n.Metric].Count
		}
	}
	return inf()
}

// why words a read's failure for the table.
func why(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	return err.Error()
}
