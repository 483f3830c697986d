package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

type link struct{ path, text, desc string }

// Handler returns the daemon's HTTP handler. Serve it with
// exporter-toolkit's web.ListenAndServe so that --web.config.file applies
// TLS and basic auth to every route, including /probe and /-/reload, which
// cause requests to targets.
//
// Every route that makes load (sends requests to a target, starts or stops
// a bench, reloads the config, profiles the daemon) is behind loadGate,
// whatever its method: a browser on another site cannot start any of it.
func (d *Daemon) Handler() http.Handler { return d.handler }

// Handle registers an extra route (bench windows add theirs here) and, if
// text is not empty, a link to it on the landing page. It must be called
// before the handler serves. A route whose pattern names GET is read-only;
// any other (POST, DELETE, no method) makes load and is behind the gate
// (see defaultClass).
func (d *Daemon) Handle(pattern string, h http.Handler, text, desc string) {
	d.route(pattern, defaultClass(pattern), h)
	if text != "" {
		path := pattern
		if i := strings.IndexByte(path, ' '); i >= 0 {
			path = path[i+1:]
		}
		d.links = append(d.links, link{path, text, desc})
	}
}

func (d *Daemon) routes() {
	d.mux = http.NewServeMux()
	d.classes = map[string]routeClass{}
	d.links = []link{
		{"/metrics", "Metrics", "the daemon's metrics"},
		{"/config", "Configuration", "the running config, secrets redacted"},
		{"/api/v1/results", "Recent results", "JSON of the result history"},
		{"/probe?target=NAME&module=MODULE&debug=true", "One-shot probe", "blackbox-style probe of one target with its log"},
	}
	d.route("GET /{$}", readOnly, http.HandlerFunc(d.handleLanding))
	d.route("GET /metrics", readOnly, promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{
		ErrorLog:          promLogger{d.logger},
		EnableOpenMetrics: true, // exemplars are only exposed in OpenMetrics and protobuf
	}))
	d.route("GET /-/healthy", readOnly, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	}))
	d.route("GET /-/ready", readOnly, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "Not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	}))
	d.route("POST /-/reload", makesLoad, http.HandlerFunc(d.handleReload))
	d.route("GET /config", readOnly, http.HandlerFunc(d.handleConfig))
	// A GET that sends a request to a target: "GET /probe" also matches
	// HEAD, and both are behind the gate.
	d.route("GET /probe", makesLoad, http.HandlerFunc(d.handleProbe))
	d.route("GET /api/v1/results", readOnly, http.HandlerFunc(d.handleResults))
	// Profiles, as Prometheus serves them, so the daemon's own cost can be
	// examined in production. A profile or a trace keeps the daemon busy
	// for its seconds, and a heap or goroutine dump shows its insides, so
	// they are behind the gate as routes that make load: the daemon's own
	// pages and non-browser clients reach them, another site's page does
	// not. Basic auth (--web.config.file) applies as to every route. No
	// cmdline: flags are nobody's business but the operator's. (Importing
	// net/http/pprof also fills http.DefaultServeMux; nothing here serves
	// that mux.)
	d.route("GET /debug/pprof/", makesLoad, http.HandlerFunc(pprof.Index))
	d.route("GET /debug/pprof/profile", makesLoad, http.HandlerFunc(pprof.Profile))
	d.route("GET /debug/pprof/symbol", makesLoad, http.HandlerFunc(pprof.Symbol))
	d.route("GET /debug/pprof/trace", makesLoad, http.HandlerFunc(pprof.Trace))
	d.handler = d.loadGate(d.mux)
}

type promLogger struct{ l log.Logger }

func (p promLogger) Println(v ...any) {
	level.Error(p.l).Log("msg", "Metrics handler error", "err", fmt.Sprint(v...))
}

func (d *Daemon) handleReload(w http.ResponseWriter, r *http.Request) {
	err := d.Reload(r.Context())
	switch {
	case errors.Is(err, ErrUnchanged):
		fmt.Fprintln(w, "Config unchanged")
	case err != nil:
		http.Error(w, "Reload failed, the running config is kept:\n"+err.Error(), http.StatusInternalServerError)
	default:
		fmt.Fprintln(w, "Config reloaded")
	}
}

func (d *Daemon) handleConfig(w http.ResponseWriter, _ *http.Request) {
	st := d.state.Load()
	b, err := st.cfg.Redacted()
	if err != nil {
		http.Error(w, "render config: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// Redacted hides Secret fields; the redactor also catches a secret in
	// a plain field, such as userinfo in a URL.
	fmt.Fprint(w, st.red.Redact(string(b)))
}

func (d *Daemon) handleResults(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	entries := d.history.List()
	out := entries[:0]
	for _, e := range entries {
		if (q.Get("target") == "" || e.Target == q.Get("target")) &&
			(q.Get("module") == "" || e.Module == q.Get("module")) &&
			(q.Get("outcome") == "" || e.Outcome == q.Get("outcome")) {
			out = append(out, e)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		Results []HistoryEntry `json:"results"`
	}{out})
}

// adhocTargetName names an ad-hoc /probe target in logs and the history;
// it never becomes a label of the daemon's registry.
const adhocTargetName = "adhoc"

// scrapeTimeoutOffset is subtracted from Prometheus's scrape timeout so
// that the probe answers before Prometheus gives up (blackbox's
// --timeout-offset).
const scrapeTimeoutOffset = 500 * time.Millisecond

func (d *Daemon) handleProbe(w http.ResponseWriter, r *http.Request) {
	st := d.state.Load()
	q := r.URL.Query()
	targetParam := q.Get("target")
	if targetParam == "" {
		WriteError(w, "target parameter is missing", http.StatusBadRequest)
		return
	}
	t, ok := st.cfg.Target(targetParam)
	if !ok {
		var status int
		var err error
		t, status, err = adhocTarget(st.cfg, targetParam, q)
		if err != nil {
			WriteError(w, err.Error(), status)
			return
		}
	}
	moduleName := q.Get("module")
	if moduleName == "" && len(t.Modules) > 0 {
		moduleName = t.Modules[0]
	}
	if moduleName == "" {
		WriteError(w, "module parameter is missing", http.StatusBadRequest)
		return
	}
	m, ok := st.cfg.Modules[moduleName]
	if !ok {
		WriteError(w, fmt.Sprintf("unknown module %q", moduleName), http.StatusBadRequest)
		return
	}
	select {
	case d.probeSlots <- struct{}{}:
		defer func() { <-d.probeSlots }()
	default:
		WriteError(w, "too many /probe requests in flight", http.StatusTooManyRequests)
		return
	}

	timeout := t.EffectiveTimeout()
	if v, err := strconv.ParseFloat(r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64); err == nil && v > 0 {
		timeout = min(timeout, time.Duration(v*float64(time.Second))-scrapeTimeoutOffset)
	}
	if timeout <= 0 {
		WriteError(w, "scrape timeout too short for a probe", http.StatusBadRequest)
		return
	}
	pf, err := d.o.BuildProbe(t, moduleName, m)
	if err != nil {
		WriteError(w, st.red.Redact(err.Error()), http.StatusBadRequest)
		return
	}

	reg := prometheus.NewRegistry()
	pm := newProbeMetrics(reg)
	buf := &probeLog{}
	logger := teeLogger{capture: buf, out: log.With(d.o.ProbeLogger, "target", t.Name, "module", moduleName, "via", "/probe")}

	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	start := time.Now()
	res := pf(ctx, logger)
	cancel()
	pm.duration.Set(time.Since(start).Seconds())
	if res.Target == "" {
		res.Target = t.Name
	}
	setProbeMetrics(pm, res)
	d.history.Add(entryOf(res, res.Model, ModeProbe, buf, st.red))

	if q.Get("debug") == "true" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var out bytes.Buffer
		fmt.Fprintf(&out, "Logs for the probe:\n%s\n\nResult:\n%s\nMetrics that would have been returned:\n", buf.String(), resultText(res))
		mfs, err := reg.Gather()
		if err == nil {
			enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				_ = enc.Encode(mf)
			}
		}
		fmt.Fprintf(&out, "\n\nTarget:\n%s\nModule: %s\n", targetSummary(t), moduleName)
		_, _ = w.Write([]byte(st.red.Redact(out.String())))
		return
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

func setProbeMetrics(pm *probeMetrics, r prober.Result) {
	sm := r.SampleSeconds()
	if r.Outcome == prober.OutcomeSuccess {
		pm.success.Set(1)
	}
	// A timing the probe did not measure is left out, not set to 0, as
	// the histograms leave it unobserved (SampleSeconds says -1).
	for _, m := range []struct {
		g prometheus.Gauge
		v float64
	}{{pm.ttft, sm.TTFT}, {pm.e2e, sm.E2E}, {pm.tpot, sm.TPOT}} {
		if m.v >= 0 {
			m.g.Set(m.v)
			pm.reg.MustRegister(m.g)
		}
	}
	pm.promptTokens.Set(float64(max(r.InputTokens, 0)))
	pm.outputTokens.Set(float64(max(r.OutputTokens, 0)))
	pm.reasoningTokens.Set(float64(sm.ReasoningTokens))
	pm.status.Set(float64(r.HTTPStatus))
	for _, o := range prober.Outcomes {
		v := 0.0
		if o == r.Outcome {
			v = 1
		}
		pm.outcome.WithLabelValues(string(o)).Set(v)
	}
}

// resultText states a probe's measurements for /probe?debug=true, from
// the samples its metrics are set from: a timing that was not measured
// says why instead of showing the gauge's 0, and the server's own timings
// follow when it stated them.
func resultText(r prober.Result) string {
	sm := r.SampleSeconds()
	var b strings.Builder
	fmt.Fprintf(&b, "outcome: %s (HTTP %d)\nstreamed: %t\n", r.Outcome, r.HTTPStatus, r.Stream)
	if r.RequestPath != "" {
		// The path answered, beside the base URL under Target: a 404
		// says which one the server does not serve.
		fmt.Fprintf(&b, "request_path: %s\n", r.RequestPath)
	}
	timing := func(name string, v float64, undefined string) {
		switch {
		case v >= 0:
			fmt.Fprintf(&b, "%s: %s\n", name, strconv.FormatFloat(v, 'f', -1, 64)+" s")
		case !r.Stream && r.Outcome == prober.OutcomeSuccess:
			fmt.Fprintf(&b, "%s: not measured (the response was not streamed)\n", name)
		default:
			fmt.Fprintf(&b, "%s: not defined (%s)\n", name, undefined)
		}
	}
	timing("ttft", sm.TTFT, "no token arrived")
	timing("tpot", sm.TPOT, "fewer than two output tokens")
	timing("e2e", sm.E2E, "the request was not sent")
	if full := r.Samples(); full.Reasoning {
		// Only for a request that reasoned, so other debug output is as it was.
		timing("ttfat", sm.TTFAT, "no answer token arrived")
		timing("answer_tpot", full.AnswerTPOTSeconds, "fewer than two answer tokens")
		fmt.Fprintf(&b, "reasoning_tokens: %d (%s)\nanswer_tokens: %d\n", full.ReasoningTokens, full.ReasoningTokensSource, full.AnswerTokens)
	}
	fmt.Fprintf(&b, "input_tokens: %d\noutput_tokens: %d\n", max(r.InputTokens, 0), max(r.OutputTokens, 0))
	if r.Server.Stated() {
		fmt.Fprintf(&b, "server_timings: %s\n", ServerTimingsText(r.Server))
	}
	if sm.ServerTTFT >= 0 {
		// Only where the server stated its TTFT, so other debug output is as it was.
		timing("server_ttft", sm.ServerTTFT, "")
		timing("outside_server_ttft", sm.OutsideServerTTFT, "")
	}
	if r.TraceID != "" {
		fmt.Fprintf(&b, "trace_id: %s\n", r.TraceID)
	}
	answerChecksText(&b, r.Checks)
	return b.String()
}

// ServerTimingsText states the timings a server gave for one request
// (ollama's load, prompt eval and eval durations; the queue and first
// token others state) in milliseconds, with its decode time per output
// token: the server's account beside the client's TTFT and TPOT (its
// prompt eval is the prefill part of TTFT, its eval per token the decode
// part of TPOT). A part the server did not state is left out, not shown as
// a zero. `servingprobe probe` prints the same line.
func ServerTimingsText(st prober.ServerTimings) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	var parts []string
	if st.QueueDuration > 0 {
		parts = append(parts, "queue "+ms(st.QueueDuration))
	}
	if st.LoadDuration > 0 {
		parts = append(parts, "load "+ms(st.LoadDuration))
	}
	if st.FirstToken > 0 {
		parts = append(parts, "first token "+ms(st.FirstToken))
	}
	// A phase shows the duration and the token count the server stated,
	// each only if stated: vLLM states the decode time but no count,
	// and a rejected duration must not print as 0.00 ms.
	phase := func(name string, d time.Duration, tokens int, extra string) {
		if d <= 0 && tokens <= 0 {
			return
		}
		p := name
		if d > 0 {
			p += " " + ms(d)
		}
		if tokens > 0 {
			p += fmt.Sprintf(" (%d tokens%s)", tokens, extra)
		}
		parts = append(parts, p)
	}
	phase("prompt eval", st.PromptEvalDuration, st.PromptEvalCount, "")
	perTok := ""
	if st.EvalDuration > 0 {
		perTok = ", –"
		if d := st.PerOutputToken(); d >= 0 {
			perTok = ", " + ms(d) + "/token"
		}
	}
	phase("eval", st.EvalDuration, st.EvalCount, perTok)
	if st.TotalDuration > 0 {
		parts = append(parts, "total "+ms(st.TotalDuration))
	}
	return strings.Join(parts, ", ")
}

// targetSummary describes a target for the debug output without its
// http_client_config (which holds the credentials).
func targetSummary(t config.Target) string {
	return fmt.Sprintf("name: %s\nurl: %s\nbackend: %s\nmodel: %s\ntimeout: %s\n",
		t.Name, config.RedactURL(t.URL), t.Backend, t.Model, t.EffectiveTimeout())
}

// adhocTarget builds a target from a URL given to /probe. It is refused
// unless probe_api.allow_adhoc_targets is set and the URL matches the
// allow-list: otherwise /probe would be an open proxy into the network the
// daemon sits in. Ad-hoc targets never borrow a configured target's
// credentials.
func adhocTarget(cfg *config.Config, raw string, q url.Values) (config.Target, int, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return config.Target{}, http.StatusBadRequest, fmt.Errorf("unknown target %q: not a configured target name nor an http(s) URL", raw)
	}
	if !cfg.Probe.AllowAdhocTargets {
		return config.Target{}, http.StatusForbidden, errors.New("ad-hoc target URLs are disabled; set probe_api.allow_adhoc_targets and probe_api.adhoc_url_allowlist to allow them")
	}
	if u.User != nil {
		return config.Target{}, http.StatusForbidden, errors.New("ad-hoc target URLs must not carry credentials")
	}
	allowed := false
	for _, re := range cfg.Probe.AdhocURLAllowlist {
		if re.MatchString(raw) {
			allowed = true
			break
		}
	}
	if !allowed {
		return config.Target{}, http.StatusForbidden, fmt.Errorf("URL %q matches no pattern of probe_api.adhoc_url_allowlist", raw)
	}
	backend := q.Get("backend")
	if backend == "" {
		return config.Target{}, http.StatusBadRequest, errors.New("backend parameter is missing (needed with a URL target)")
	}
	if _, err := prober.LookupBackend(backend); err != nil {
		return config.Target{}, http.StatusBadRequest, err
	}
	t := config.DefaultTarget
	t.Name = adhocTargetName
	t.URL = raw
	t.Backend = backend
	t.Model = q.Get("model")
	t.Timeout = t.Interval
	// A redirect would take the probe off the allow-list: an allowed
	// server could send it anywhere. A 3xx is reported as it is.
	t.HTTPClientConfig.FollowRedirects = false
	return t, 0, nil
}
