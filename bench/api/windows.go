package api

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
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
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
	// Record is the bench_serving JSONL record (strict JSON), written to
	// the results file; the summary and headline are read from it.
	Record json.RawMessage
	// Headline is a sweep's headline (sweepOutput); a single run's is
	// read from its Record.
	Headline exporter.BenchHeadline
	// Sweep is a sweep's or SLO search's points and answer; Record is
	// then empty.
	Sweep *SweepOutput
	// Runs are the records of a window of several runs (the body's
	// runs), in the order run; Record is then empty, and the summary and
	// headline are read from the last.
	Runs []json.RawMessage
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
	// CheckpointInterval is how often a running window's progress is
	// written to its results file, so that a window cut short by a crash
	// is listed after the restart with the progress it had then. Default
	// 10 s.
	CheckpointInterval time.Duration
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

	// writeFn writes one file of a run atomically (writeAtomic); tests
	// replace it, under mu, to make writes fail as a full or read-only
	// disk does.
	writeFn func(dir, id, path string, data []byte) error
	// watchedFn, when set (under mu), is called by a run's watcher after
	// each check of the run's target (and after cancelling the run if the
	// target was gone), so that a test can wait for checks made after a
	// reload instead of sleeping.
	watchedFn func(id string)
}

// benchRun is one run. Fields after mu are guarded by it.
type benchRun struct {
	progress *prober.Progress
	cancel   context.CancelCauseFunc

	mu   sync.Mutex
	view View
	// headline is what the landing page shows of a finished run with a
	// summary, nil otherwise: the run's own typed headline (the one its
	// gauges export), or, for a run read back from its results file, the
	// one made once from that file (storedHeadline).
	headline *exporter.BenchHeadline
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
	// Summary is the run's summary as the CLI's JSON, read from Record
	// (fromRecord); the results file does not store it.
	Summary json.RawMessage `json:"summary"`
	// Record is bench_serving's JSONL record of the run.
	Record json.RawMessage `json:"record,omitempty"`
	// Sweep holds a sweep's or SLO search's records and answer.
	Sweep *SweepOutput `json:"sweep,omitempty"`
	// Runs are the records of a window of several runs, each
	// bench_serving's JSONL record of one run, in the order run; Record
	// is then empty, and Summary is the last run's.
	Runs []json.RawMessage `json:"runs,omitempty"`
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
		return nil, errors.New("bench api: no run function")
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = time.Second
	}
	if o.MaxListed <= 0 {
		o.MaxListed = 1000
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 10 * time.Second
	}
	b := &Windows{d: d, o: o, logger: d.Logger(), runs: map[string]*benchRun{}, active: map[string]string{}, writeFn: writeAtomic}
	if err := b.load(d.Config().Bench.ResultsDir); err != nil {
		return nil, err
	}
	b.prune()
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
	b.mu.Unlock()

	// The window is on disk before it is accepted, so that a crash cannot
	// erase it: after a restart it is listed as interrupted. A window that
	// cannot be recorded is refused: its result could not be kept either.
	if werr := b.writeView(run.snapshot()); werr != nil {
		b.mu.Lock()
		delete(b.active, req.Target.Name)
		b.mu.Unlock()
		cancel(nil)
		level.Warn(b.logger).Log("msg", "Bench run refused: it cannot be recorded", "target", req.Target.Name, "err", werr)
		writeAPIError(w, &apiError{http.StatusServiceUnavailable, "the bench window cannot be recorded in bench.results_dir, so it is not started: " + werr.Error()})
		return
	}
	b.mu.Lock()
	if b.closed {
		// Close ran during the write: it waits only for runs it saw.
		// The record goes, or the restart would list a window that was
		// refused as interrupted.
		delete(b.active, req.Target.Name)
		b.mu.Unlock()
		cancel(nil)
		_ = os.Remove(resultFile(cfg.Bench.ResultsDir, id))
		writeAPIError(w, &apiError{http.StatusServiceUnavailable, "the daemon is shutting down"})
		return
	}
	b.runs[id] = run
	b.forgetOldLocked()
	b.wg.Add(1)
	b.mu.Unlock()

	b.d.Metrics().PrepareBench(req.Target.Name, req.ModuleName)
	go b.execute(ctx, run, req)
	level.Info(b.logger).Log("msg", "Bench run accepted", "id", id, "target", req.Target.Name, "module", req.ModuleName,
		"num_prompts", req.Spec.NumPrompts, "request_rate", pyfmt.Float(req.Spec.RequestRate), "max_concurrency", req.Spec.MaxConcurrency)
	w.Header().Set("Location", "/api/v1/benches/"+id)
	writeJSON(w, http.StatusAccepted, run.snapshot())
}

// execute runs one bench, watches for its target's removal, records the
// end, writes the results file and frees the target.
func (b *Windows) execute(ctx context.Context, run *benchRun, req Request) {
	defer b.wg.Done()
	defer run.cancel(nil)
	id, target := run.view.ID, req.Target.Name
	// The run logs what servers answered and the server-metrics endpoints
	// it could not read (a server_metrics URL may carry a password).
	logger := log.With(config.RedactingLogger(b.logger, b.d.Redactor), "id", id, "target", target)

	watchDone, watcherExited := make(chan struct{}), make(chan struct{})
	// The start is recorded here, off the run's goroutine: the run's
	// clock is already going when it calls Started, and an fsync there
	// would delay its first requests.
	startedAt := make(chan time.Time, 1)
	go func() {
		defer close(watcherExited)
		t := time.NewTicker(b.o.WatchInterval)
		defer t.Stop()
		cp := time.NewTicker(b.o.CheckpointInterval)
		defer cp.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-watchDone:
				return
			case <-t.C:
				_, ok := b.d.Config().Target(target)
				if !ok {
					run.cancel(errTargetRemoved)
				}
				b.mu.Lock()
				watched := b.watchedFn
				b.mu.Unlock()
				if watched != nil {
					watched(id)
				}
				if !ok {
					return
				}
			case st := <-startedAt:
				// Recorded before it is shown, as every state the API
				// reports: a client that sees running finds it on disk.
				v := run.snapshot()
				v.Status, v.Started = exporter.BenchRunning, &st
				if err := b.writeView(v); err != nil {
					level.Warn(logger).Log("msg", "Bench progress not recorded", "err", err)
				}
				run.mu.Lock()
				run.view.Status, run.view.Started = exporter.BenchRunning, &st
				run.mu.Unlock()
			case <-cp.C:
				b.checkpoint(run, logger)
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
				// The gauges before the status, so that a client that
				// sees running finds the window's gauges set.
				b.d.Metrics().BenchStarted(target, started)
				startedAt <- st // buffered: the first call only
				level.Info(logger).Log("msg", "Bench run started")
			}
			b.d.Metrics().BenchPoint(target, now, rate, maxConcurrency)
		},
	}
	out, err := b.o.Run(ctx, job)
	close(watchDone)
	<-watcherExited // no checkpoint may overwrite the final write
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
	et := end.UTC()
	run.mu.Lock()
	view := run.view
	run.mu.Unlock()
	if !started.IsZero() && view.Started == nil {
		st := started.UTC() // the run ended before the watcher recorded its start
		view.Started = &st
	}
	red := b.d.Redactor()
	view.Status, view.Ended, view.Error = status, &et, red.Sanitize(msg, 2000)
	// The summary carries the target's /server_info answer verbatim; a
	// server that echoes request headers there would hand our credentials
	// to the results file and the API.
	view.Record = red.RedactJSON(out.Record)
	for _, r := range out.Runs {
		view.Runs = append(view.Runs, red.RedactJSON(r))
	}
	headline := out.Headline
	var shown *exporter.BenchHeadline
	if rec := view.lastRecord(); out.Sweep == nil && len(rec) > 0 {
		// The headline is derived from the record once; the server's
		// reason can quote what it answered, as the record it came from
		// is redacted.
		var h *exporter.BenchHeadline
		view.Summary, h = fromRecord(rec)
		if h != nil {
			h.ServerMissing = red.Redact(h.ServerMissing)
			headline, shown = *h, h
		}
	}
	if out.Sweep != nil {
		sw := *out.Sweep
		sw.Records = make([]json.RawMessage, len(out.Sweep.Records))
		for i, r := range out.Sweep.Records {
			sw.Records[i] = red.RedactJSON(r)
		}
		view.Sweep = &sw
	}
	snap := run.progress.Snapshot()
	if out.Sweep != nil {
		snap = out.Sweep.Progress() // all its points', not the last one's
	}
	view.Progress = &snap
	// Written before it is shown: a run the API reports as ended is on
	// disk. A result that cannot be written is the run's result: the API
	// says failed with the write error and the counter says write_failed,
	// never completed, since the run will be gone (or listed as
	// interrupted) after a restart. The report is not the result: a
	// report that could not be drawn or written leaves the run its status
	// and figures, and report_error says why it is missing.
	view.ReportError = red.Sanitize(out.ReportError, 2000)
	dir := b.d.Config().Bench.ResultsDir
	result := status
	was := string(status)
	if msg != "" {
		was += ": " + view.Error
	}
	var lost []string // what of the result could not be written, and why
	if len(out.Report) > 0 {
		if rerr := b.writeFile(dir, view.ID, reportFile(dir, view.ID), out.Report); rerr != nil {
			level.Error(logger).Log("msg", "Bench report not written", "err", rerr)
			view.ReportError = red.Sanitize("the report was not written to bench.results_dir: "+rerr.Error(), 2000)
		} else {
			view.Report = "api/v1/benches/" + view.ID + "/report"
		}
	}
	failed := func() {
		view.Status, result = exporter.BenchFail, exporter.BenchWriteFailed
		view.Error = red.Sanitize(strings.Join(lost, "; ")+" (the run itself ended "+was+")", 2000)
		msg = view.Error
	}
	if len(lost) > 0 {
		failed()
	}
	werr := b.writeView(view)
	if werr != nil {
		lost = append(lost, "the result was not written to bench.results_dir, so it will not survive a restart: "+werr.Error())
		failed()
	}
	if len(lost) > 0 {
		level.Error(logger).Log("msg", "Bench result not written", "err", strings.Join(lost, "; "))
	}
	b.d.Metrics().BenchFinished(target, end, result, headline)
	if werr == nil {
		// Before the end is shown, so that a client that sees it finds
		// the directory within its retention. This run is still active,
		// so it is not among those removed.
		b.prune()
	}
	run.mu.Lock()
	run.view, run.headline = view, shown
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

// writeFile writes one file of run id atomically.
func (b *Windows) writeFile(dir, id, path string, data []byte) error {
	b.mu.Lock()
	w := b.writeFn
	b.mu.Unlock()
	return w(dir, id, path, data)
}

// lastRecord is the record the window's summary and headline are read
// from: its run's, or the last of its runs'.
func (v *View) lastRecord() json.RawMessage {
	if len(v.Runs) > 0 {
		return v.Runs[len(v.Runs)-1]
	}
	return v.Record
}

// storedView is a view as its results file holds it: without the
// summary, which is read back from the record (fromRecord), so that the
// file holds each figure once.
type storedView struct {
	View
	Summary json.RawMessage `json:"summary,omitempty"` // always nil: hides View.Summary
}

// writeView writes a run's view to its results file.
func (b *Windows) writeView(v View) error {
	line, err := json.Marshal(storedView{View: v})
	if err != nil {
		return err
	}
	dir := b.d.Config().Bench.ResultsDir
	return b.writeFile(dir, v.ID, resultFile(dir, v.ID), append(line, '\n'))
}

// checkpoint writes a running window's view with its progress so far. A
// failed checkpoint is only logged: the run goes on, and its final write
// decides what it reports.
func (b *Windows) checkpoint(run *benchRun, logger log.Logger) {
	v := run.snapshot()
	if err := b.writeView(v); err != nil {
		level.Warn(logger).Log("msg", "Bench progress not recorded", "err", err)
	}
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
		views[i].Summary, views[i].Record, views[i].Runs = nil, nil, nil
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

// resultFile is the results file of run id.
func resultFile(dir, id string) string { return filepath.Join(dir, "bench-"+id+".jsonl") }

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
		path := filepath.Join(dir, name)
		v, err := readResult(path)
		if err == nil && v.ID != id {
			err = fmt.Errorf("the file holds run %q", prober.TruncateUTF8(v.ID, 40))
		}
		if err != nil {
			level.Warn(b.logger).Log("msg", "Skipping unreadable bench result", "file", name, "err", err)
			continue
		}
		if v.Ended == nil {
			b.interrupted(&v, path)
		}
		var h *exporter.BenchHeadline
		v.Summary, h = fromRecord(v.lastRecord())
		b.runs[id] = &benchRun{view: v, headline: h}
	}
	b.forgetOldLocked()
	return nil
}

// interrupted marks a window that was recorded but never ended: the daemon
// was killed or crashed while it was queued or running. Its progress is
// the last one recorded (at the start, then every CheckpointInterval);
// ended is the time of that record, the last time the run is known to have
// been alive, so that clients waiting for an end stop waiting.
func (b *Windows) interrupted(v *View, path string) {
	last := v.Created
	if fi, err := os.Stat(path); err == nil && fi.ModTime().After(last) {
		last = fi.ModTime()
	}
	last = last.UTC()
	was := v.Status
	v.Status, v.Ended = exporter.BenchInterrupted, &last
	v.Error = fmt.Sprintf("the daemon stopped while the run was %s (killed or crashed); the progress shown is the last recorded, at %s", was, last.Format(time.RFC3339))
	// Rewritten so that it reads the same after every restart; if the
	// directory is read-only now, it is still listed from memory.
	line, err := json.Marshal(v)
	if err == nil {
		err = writeAtomic(filepath.Dir(path), v.ID, path, append(line, '\n'))
	}
	if err != nil {
		level.Warn(b.logger).Log("msg", "Interrupted bench run not rewritten", "id", v.ID, "err", err)
	}
	level.Warn(b.logger).Log("msg", "Bench run was interrupted by a crash or kill", "id", v.ID, "target", v.Target, "was", was)
}

// prune removes the oldest ended windows' files (result and report)
// while the results directory holds more than bench.results_retention_count
// windows or bench.results_retention_bytes of their files, and forgets
// them. A window still queued or running is never removed; nor is
// anything in the directory that is not a window's file.
func (b *Windows) prune() {
	cfg := b.d.Config().Bench
	if cfg.ResultsDir == "" || (cfg.ResultsRetentionCount <= 0 && cfg.ResultsRetentionBytes <= 0) {
		return
	}
	entries, err := os.ReadDir(cfg.ResultsDir)
	if err != nil {
		return // load and the writes report an unreadable directory
	}
	type window struct {
		id    string
		when  time.Time
		bytes int64
		files []string
	}
	byID := map[string]*window{}
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutPrefix(name, "bench-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if i := strings.LastIndexByte(id, '.'); i >= 0 && (id[i:] == ".jsonl" || id[i:] == ".html") {
			id = id[:i]
		} else {
			continue
		}
		if !validBenchID(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		w := byID[id]
		if w == nil {
			w = &window{id: id, when: fi.ModTime()}
			byID[id] = w
		}
		w.bytes += fi.Size()
		w.files = append(w.files, name)
		if fi.ModTime().Before(w.when) {
			w.when = fi.ModTime()
		}
	}
	b.mu.Lock()
	running := map[string]bool{}
	for _, id := range b.active {
		running[id] = true
	}
	for id, w := range byID {
		if r := b.runs[id]; r != nil {
			w.when = r.snapshot().Created // the order the API lists
		}
	}
	b.mu.Unlock()
	all := make([]*window, 0, len(byID))
	var total int64
	for _, w := range byID {
		all = append(all, w)
		total += w.bytes
	}
	slices.SortFunc(all, func(x, y *window) int {
		if c := x.when.Compare(y.when); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	count := len(all)
	var removed []string
	for _, w := range all {
		overCount := cfg.ResultsRetentionCount > 0 && count > cfg.ResultsRetentionCount
		overBytes := cfg.ResultsRetentionBytes > 0 && total > cfg.ResultsRetentionBytes
		if !overCount && !overBytes {
			break
		}
		if running[w.id] {
			continue
		}
		ok := true
		for _, f := range w.files {
			if err := os.Remove(filepath.Join(cfg.ResultsDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				level.Warn(b.logger).Log("msg", "Old bench result not removed", "file", f, "err", err)
				ok = false
			}
		}
		if !ok {
			continue
		}
		count--
		total -= w.bytes
		removed = append(removed, w.id)
	}
	if len(removed) == 0 {
		return
	}
	b.mu.Lock()
	for _, id := range removed {
		delete(b.runs, id)
	}
	b.mu.Unlock()
	level.Info(b.logger).Log("msg", "Removed the oldest bench results beyond the retention", "windows", len(removed),
		"kept", count, "kept_bytes", total, "retention_count", cfg.ResultsRetentionCount, "retention_bytes", cfg.ResultsRetentionBytes)
}

// readResult reads a results file. A line that is not valid UTF-8 (written
// before bodies were checked) has each invalid byte replaced by U+FFFD:
// the JSON stays valid, since its structure is ASCII, and the list that
// holds it stays readable.
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
	line := sc.Bytes()
	if !utf8.Valid(line) {
		line = []byte(strings.ToValidUTF8(string(line), "\uFFFD"))
	}
	err = json.Unmarshal(line, &v)
	return v, err
}
