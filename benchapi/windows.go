package benchapi

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
)

// Job is one run handed to the RunFunc.
type Job struct {
	ID      string
	Request Request
	// Observer records each measured Result with mode="bench".
	Observer prober.Observer
	Progress *prober.Progress
	// Started must be called when the measured requests start (after
	// warmup), with their rate and max concurrency; the first call moves
	// the run to running and starts the bench gauges, every call (one per
	// point of a sweep) sets the point's gauges.
	Started func(rate float64, maxConcurrency int)
	Logger  log.Logger
}

// Output is what a finished run produced.
type Output struct {
	// Summary is the summary as the CLI's JSON (bench.Summary).
	Summary json.RawMessage
	// Record is the bench_serving JSONL record (strict JSON), written to the
	// results file.
	Record   json.RawMessage
	Headline exporter.BenchHeadline
	// Sweep is a sweep's or SLO search's points and answer; Summary and
	// Record are then empty.
	Sweep *SweepOutput
	// Report is the run's HTML report, written beside the results file.
	Report []byte
	// ReportError says why there is no Report, "" when there is.
	ReportError string
}

// RunFunc runs one bench job. It returns when the run ends or ctx is
// done; a cancelled run may still return a partial output.
type RunFunc func(ctx context.Context, job Job) (Output, error)

// Options configure Enable.
type Options struct {
	Run RunFunc
	// WatchInterval is how often a run checks that its target is still
	// configured; default 1 s.
	WatchInterval time.Duration
	// MaxListed bounds the runs kept in memory (and listed); the oldest
	// finished runs are forgotten first (their files stay). Default 1000.
	MaxListed int
}

// Benches runs bench windows for a Daemon and serves /api/v1/benches.
type Windows struct {
	d      *exporter.Daemon
	o      Options
	logger log.Logger

	mu     sync.Mutex
	runs   map[string]*benchRun
	active map[string]string // target -> id of its queued or running run
	wg     sync.WaitGroup
	closed bool
}

// benchRun is one run. Fields after mu are guarded by it.
type benchRun struct {
	progress *prober.Progress
	cancel   context.CancelCauseFunc

	mu   sync.Mutex
	view View
}

// View is a run as the API shows it and the results file stores it.
type View struct {
	ID      string               `json:"id"`
	Target  string               `json:"target"`
	Module  string               `json:"module"`
	Tag     string               `json:"tag,omitempty"`
	Status  exporter.BenchStatus `json:"status"`
	Created time.Time            `json:"created"`
	Started *time.Time           `json:"started"`
	Ended   *time.Time           `json:"ended"`
	Error   string               `json:"error,omitempty"`
	// Request is the body as sent.
	Request  json.RawMessage          `json:"request"`
	Progress *prober.ProgressSnapshot `json:"progress,omitempty"`
	Summary  json.RawMessage          `json:"summary"`
	// Record is bench_serving's JSONL record of the run.
	Record json.RawMessage `json:"record,omitempty"`
	// Sweep holds a sweep's or SLO search's records and answer.
	Sweep *SweepOutput `json:"sweep,omitempty"`
	// Report is the path of the run's HTML report under the daemon's
	// URL, once it is written.
	Report string `json:"report,omitempty"`
	// ReportError says why the run has no report though it has a result:
	// the report could not be drawn or written. The run's status is the
	// run's, not the report's.
	ReportError string `json:"report_error,omitempty"`
}

// Enable registers the bench API on d's mux and lists the runs
// already in bench.results_dir. Call it before the handler serves.
func Enable(d *exporter.Daemon, o Options) (*Windows, error) {
	if o.Run == nil {
		return nil, errors.New("benchapi: no run function")
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = time.Second
	}
	if o.MaxListed <= 0 {
		o.MaxListed = 1000
	}
	b := &Windows{d: d, o: o, logger: d.Logger(), runs: map[string]*benchRun{}, active: map[string]string{}}
	if err := b.load(d.Config().Bench.ResultsDir); err != nil {
		return nil, err
	}
	d.Handle("POST /api/v1/benches", http.HandlerFunc(b.handleCreate), "", "")
	d.Handle("GET /api/v1/benches", http.HandlerFunc(b.handleList), "Bench runs", "bench windows: POST to start one, GET to follow, DELETE to cancel")
	d.Handle("GET /api/v1/benches/{id}", http.HandlerFunc(b.handleGet), "", "")
	d.Handle("DELETE /api/v1/benches/{id}", http.HandlerFunc(b.handleDelete), "", "")
	d.Handle("GET /api/v1/benches/{id}/report", http.HandlerFunc(b.handleReport), "", "")
	d.SetBenchWindows(b.landingWindows)
	return b, nil
}

// Close cancels every run and waits for them to end and be written.
func (b *Windows) Close() {
	b.mu.Lock()
	b.closed = true
	for _, r := range b.runs {
		if r.cancel != nil {
			r.cancel(errShutdown)
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

var (
	errShutdown       = errors.New("the daemon is shutting down")
	errCanceledByUser = errors.New("canceled by DELETE /api/v1/benches/{id}")
	errTargetRemoved  = errors.New("target removed from the configuration by a reload")
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]string{"error": e.msg})
}

func (b *Windows) handleCreate(w http.ResponseWriter, r *http.Request) {
	cfg := b.d.Config()
	if !cfg.Bench.Enabled {
		writeAPIError(w, &apiError{http.StatusForbidden, "bench windows are disabled (bench.enabled: false)"})
		return
	}
	req, aerr := decodeRequest(r.Body, cfg)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	id := newBenchID()
	ctx, cancel := context.WithCancelCause(context.Background())
	run := &benchRun{progress: &prober.Progress{}, cancel: cancel}
	run.view = View{ID: id, Target: req.Target.Name, Module: req.ModuleName, Tag: req.Spec.Tag,
		Status: exporter.BenchQueued, Created: time.Now().UTC(), Request: req.Body}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		cancel(nil)
		writeAPIError(w, &apiError{http.StatusServiceUnavailable, "the daemon is shutting down"})
		return
	}
	if other, busy := b.active[req.Target.Name]; busy {
		b.mu.Unlock()
		cancel(nil)
		writeJSON(w, http.StatusConflict, map[string]string{"error": fmt.Sprintf("a bench run is already active on target %q", req.Target.Name), "id": other})
		return
	}
	if len(b.active) >= cfg.Bench.MaxConcurrentRuns {
		b.mu.Unlock()
		cancel(nil)
		writeAPIError(w, overLimit("%d bench runs are active: bench.max_concurrent_runs is %d", len(b.active), cfg.Bench.MaxConcurrentRuns))
		return
	}
	b.active[req.Target.Name] = id
	b.runs[id] = run
	b.forgetOldLocked()
	b.wg.Add(1)
	b.mu.Unlock()

	b.d.Metrics().PrepareBench(req.Target.Name, req.ModuleName)
	go b.execute(ctx, run, req)
	level.Info(b.logger).Log("msg", "Bench run accepted", "id", id, "target", req.Target.Name, "module", req.ModuleName,
		"num_prompts", req.Spec.NumPrompts, "request_rate", prober.PyFloat(req.Spec.RequestRate), "max_concurrency", req.Spec.MaxConcurrency)
	w.Header().Set("Location", "/api/v1/benches/"+id)
	writeJSON(w, http.StatusAccepted, run.snapshot())
}

// execute runs one bench, watches for its target's removal, records the
// end, writes the results file and frees the target.
func (b *Windows) execute(ctx context.Context, run *benchRun, req Request) {
	defer b.wg.Done()
	defer run.cancel(nil)
	id, target := run.view.ID, req.Target.Name
	logger := log.With(redactLogger{b.logger, b.d.Redactor}, "id", id, "target", target)

	watchDone := make(chan struct{})
	go func() {
		t := time.NewTicker(b.o.WatchInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-watchDone:
				return
			case <-t.C:
				if _, ok := b.d.Config().Target(target); !ok {
					run.cancel(errTargetRemoved)
					return
				}
			}
		}
	}()

	var started time.Time
	job := Job{
		ID: id, Request: req,
		Observer: b.d.Metrics().Observer(exporter.ModeBench),
		Progress: run.progress,
		Logger:   logger,
		Started: func(rate float64, maxConcurrency int) {
			now := time.Now()
			if started.IsZero() {
				started = now
				st := started.UTC()
				run.mu.Lock()
				run.view.Status, run.view.Started = exporter.BenchRunning, &st
				run.mu.Unlock()
				b.d.Metrics().BenchStarted(target, started)
				level.Info(logger).Log("msg", "Bench run started")
			}
			b.d.Metrics().BenchPoint(target, now, rate, maxConcurrency)
		},
	}
	out, err := b.o.Run(ctx, job)
	close(watchDone)
	end := time.Now()
	if started.IsZero() {
		// Failed before the measured run: still mark the window so that
		// the end timestamp never precedes the start.
		b.d.Metrics().BenchStarted(target, end)
	}

	status := exporter.BenchSucceeded
	var msg string
	switch cause := context.Cause(ctx); {
	case err == nil:
	case cause != nil:
		status, msg = exporter.BenchCancel, cause.Error()
	default:
		status, msg = exporter.BenchFail, err.Error()
	}
	b.d.Metrics().BenchFinished(target, end, status, out.Headline)

	et := end.UTC()
	run.mu.Lock()
	view := run.view
	run.mu.Unlock()
	red := b.d.Redactor()
	view.Status, view.Ended, view.Error = status, &et, prober.TruncateUTF8(red.Redact(msg), 2000)
	// The summary carries the target's /server_info answer verbatim; a
	// server that echoes request headers there would hand our credentials
	// to the results file and the API.
	view.Summary, view.Record = red.RedactJSON(out.Summary), red.RedactJSON(out.Record)
	if out.Sweep != nil {
		sw := *out.Sweep
		sw.Records = make([]json.RawMessage, len(out.Sweep.Records))
		for i, r := range out.Sweep.Records {
			sw.Records[i] = red.RedactJSON(r)
		}
		view.Sweep = &sw
	}
	snap := run.progress.Snapshot()
	view.Progress = &snap
	view.ReportError = prober.TruncateUTF8(red.Redact(out.ReportError), 2000)
	if len(out.Report) > 0 {
		if werr := writeReportFile(b.d.Config().Bench.ResultsDir, view.ID, out.Report); werr != nil {
			level.Error(logger).Log("msg", "Bench report not written", "err", werr)
			view.ReportError = prober.TruncateUTF8(red.Redact("report not written: "+werr.Error()), 2000)
		} else {
			view.Report = "api/v1/benches/" + view.ID + "/report"
		}
	}
	// Written before it is shown: a run the API reports as ended is on disk.
	if werr := writeResult(b.d.Config().Bench.ResultsDir, view); werr != nil {
		level.Error(logger).Log("msg", "Bench result not written", "err", werr)
	}
	run.mu.Lock()
	run.view = view
	run.mu.Unlock()
	b.mu.Lock()
	delete(b.active, target)
	b.mu.Unlock()
	kv := []any{"msg", "Bench run ended", "status", status, "duration_seconds", end.Sub(view.Created).Seconds()}
	if msg != "" {
		kv = append(kv, "err", view.Error)
	}
	if view.ReportError != "" {
		kv = append(kv, "report_error", view.ReportError)
	}
	level.Info(logger).Log(kv...)
}

// redactLogger replaces the config's secrets in a run's log values: the
// run logs the server-metrics endpoints it could not read, and a target's
// server_metrics URL may carry a password.
type redactLogger struct {
	next log.Logger
	red  func() *config.Redactor
}

func (l redactLogger) Log(kv ...any) error {
	red := l.red()
	out := make([]any, len(kv))
	for i, v := range kv {
		switch v := v.(type) {
		case string:
			out[i] = red.Redact(v)
		case error:
			out[i] = red.Redact(v.Error())
		default:
			out[i] = v
		}
	}
	return l.next.Log(out...)
}

// snapshot copies the view with live progress.
func (r *benchRun) snapshot() View {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.view
	if v.Progress == nil && r.progress != nil {
		s := r.progress.Snapshot()
		v.Progress = &s
	}
	return v
}

// forgetOldLocked drops the oldest finished runs beyond MaxListed.
func (b *Windows) forgetOldLocked() {
	if len(b.runs) <= b.o.MaxListed {
		return
	}
	views := b.listLocked()
	for i := len(views) - 1; i >= 0 && len(b.runs) > b.o.MaxListed; i-- {
		if _, active := b.active[views[i].Target]; active && b.active[views[i].Target] == views[i].ID {
			continue
		}
		delete(b.runs, views[i].ID)
	}
}

// listLocked returns every run, newest first.
func (b *Windows) listLocked() []View {
	out := make([]View, 0, len(b.runs))
	for _, r := range b.runs {
		out = append(out, r.snapshot())
	}
	slices.SortFunc(out, func(x, y View) int {
		if c := y.Created.Compare(x.Created); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
	return out
}

func (b *Windows) handleList(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	views := b.listLocked()
	b.mu.Unlock()
	// The list is an index: summaries and records are one GET away.
	for i := range views {
		views[i].Summary, views[i].Record = nil, nil
		if sw := views[i].Sweep; sw != nil {
			c := *sw
			c.Records = nil
			views[i].Sweep = &c
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Benches []View `json:"benches"`
	}{views})
}

func (b *Windows) lookup(w http.ResponseWriter, r *http.Request) *benchRun {
	id := r.PathValue("id")
	if !validBenchID(id) {
		writeAPIError(w, &apiError{http.StatusNotFound, "no such bench run (ids are 24 lower-case hex digits)"})
		return nil
	}
	b.mu.Lock()
	run := b.runs[id]
	b.mu.Unlock()
	if run == nil {
		writeAPIError(w, &apiError{http.StatusNotFound, "no such bench run"})
	}
	return run
}

func (b *Windows) handleGet(w http.ResponseWriter, r *http.Request) {
	if run := b.lookup(w, r); run != nil {
		writeJSON(w, http.StatusOK, run.snapshot())
	}
}

func (b *Windows) handleDelete(w http.ResponseWriter, r *http.Request) {
	run := b.lookup(w, r)
	if run == nil {
		return
	}
	v := run.snapshot()
	if v.Ended != nil || run.cancel == nil {
		writeAPIError(w, &apiError{http.StatusConflict, fmt.Sprintf("bench run %s has already ended (%s)", v.ID, v.Status)})
		return
	}
	run.cancel(errCanceledByUser)
	writeJSON(w, http.StatusAccepted, v)
}

func newBenchID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// handleReport serves a finished run's HTML report.
func (b *Windows) handleReport(w http.ResponseWriter, r *http.Request) {
	run := b.lookup(w, r)
	if run == nil {
		return
	}
	v := run.snapshot()
	if v.Report == "" {
		writeAPIError(w, &apiError{http.StatusNotFound, fmt.Sprintf("bench run %s has no report (%s)", v.ID, v.Status)})
		return
	}
	page, err := os.ReadFile(reportFile(b.d.Config().Bench.ResultsDir, v.ID))
	if err != nil {
		writeAPIError(w, &apiError{http.StatusNotFound, "the report file is gone: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page is self-contained: it needs no script and fetches nothing.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	_, _ = w.Write(page)
}

// reportFile is the HTML report of run id, beside its results file.
func reportFile(dir, id string) string { return filepath.Join(dir, "bench-"+id+".html") }

// writeReportFile writes a run's report, atomically as its results file
// (before it, so that a run whose result is on disk has its report).
func writeReportFile(dir, id string, page []byte) error {
	return writeAtomic(dir, id, reportFile(dir, id), page)
}

// resultFile is the results file of run id.
func resultFile(dir, id string) string { return filepath.Join(dir, "bench-"+id+".jsonl") }

// writeResult writes one JSON line atomically: a temporary file in the same
// directory, fsync, rename over the final name, fsync of the directory. A
// crash leaves either no file or the whole record.
func writeResult(dir string, v View) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(dir, v.ID, resultFile(dir, v.ID), append(line, '\n'))
}

// writeAtomic writes a file of run id atomically: a temporary file in the
// same directory, fsync, rename over the final name, fsync of the
// directory. A crash leaves either no file or the whole of it (and maybe a
// temporary file, which load removes).
func writeAtomic(dir, id, path string, data []byte) error {
	if dir == "" {
		return errors.New("bench.results_dir is not set")
	}
	if !validBenchID(id) {
		return fmt.Errorf("invalid bench id %q", id)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".bench-"+id+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// load lists the finished runs in dir. Unreadable files are skipped with a
// warning: one bad file must not keep the daemon from starting.
func (b *Windows) load(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench.results_dir: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		// A write killed before its rename leaves its temp file; it never
		// became a result, so it is removed rather than left to pile up.
		if strings.HasPrefix(name, ".bench-") && strings.HasSuffix(name, ".tmp") && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, name)); err == nil {
				level.Info(b.logger).Log("msg", "Removed an interrupted bench result write", "file", name)
			}
			continue
		}
		id, ok := strings.CutPrefix(name, "bench-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		id, ok = strings.CutSuffix(id, ".jsonl")
		if !ok || !validBenchID(id) {
			continue
		}
		v, err := readResult(filepath.Join(dir, name))
		if err != nil || v.ID != id {
			level.Warn(b.logger).Log("msg", "Skipping unreadable bench result", "file", name, "err", err)
			continue
		}
		b.runs[id] = &benchRun{view: v}
	}
	b.forgetOldLocked()
	return nil
}

func readResult(path string) (View, error) {
	var v View
	f, err := os.Open(path)
	if err != nil {
		return v, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return v, err
		}
		return v, errors.New("empty file")
	}
	err = json.Unmarshal(sc.Bytes(), &v)
	return v, err
}
