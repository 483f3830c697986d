package exporter

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// TargetSeries describes the label sets of one configured target.
type TargetSeries struct {
	Name    string
	Backend string
	// Model is the configured model; empty means auto-detected.
	Model   string
	Modules []string
	// Checks holds the answer checks of the target's modules, by module
	// name (prober.ModuleCheckNames); modules without checks are absent.
	Checks map[string][]prober.CheckName
	// Turns holds the turns of the target's conversation modules, by
	// module name; other modules have no per-turn series.
	Turns map[string]int
	// Endpoint is the target's configured base URL, compared across
	// reloads and never a label: the TLS expiry gauge describes the
	// certificate chain of the endpoint that sent it, so a reload that
	// changes the endpoint (https to http, which sends none again, or
	// another host) deletes it.
	Endpoint string
}

// targetState is what seriesState knows of one target.
type targetState struct {
	TargetSeries
	// model is the model label in use: the configured model, else the last
	// detected one, else "".
	model       string
	tokenSource string
	// reasoningSource is where the reasoning count of the last successful
	// request that reasoned came from; a request that did not reason
	// leaves it (it says nothing about where counts come from).
	reasoningSource string
}

// seriesState owns which label sets exist. Observations take the read lock
// and changes to the label sets the write lock, so that an observation can
// never re-create a series that a reload or a model change just deleted.
type seriesState struct {
	m       *Metrics
	mu      sync.RWMutex
	targets map[string]*targetState
}

func newSeriesState(m *Metrics) *seriesState {
	return &seriesState{m: m, targets: map[string]*targetState{}}
}

func (s *seriesState) hasModule(target, module string) bool {
	t, ok := s.targets[target]
	return ok && slices.Contains(t.Modules, module)
}

// sanitizeModel makes a server-sent model name safe as a label value. The
// model label is the one label value that can come from a server (GET
// /v1/models when the config leaves model empty): a name that is not shaped
// like a model id (config.Redactor.Label: bounded, a closed character set)
// becomes config.LabelPlaceholder, as if none had been detected. It is
// bounded in number by keeping one model per target at a time. Detection
// already refuses such names and those holding a credential or part of one
// (Label with the target's redactor); this holds for any other path.
func sanitizeModel(s string) string {
	m, _ := (*config.Redactor)(nil).Label(s)
	return m
}

const unknownTokenSource = "unknown"

// noReasoningSource is reasoning_token_source before any successful
// request of the target reasoned: there is no count to have a source.
const noReasoningSource = "none"

// SetTargets makes the label sets match targets: the series of removed
// targets, modules, models and backends are deleted, and every per-request
// series of a new label set is created at zero (mode="probe"), so that
// rate() sees zeros from the first scrape. The probe gauges are not
// pre-created: a 0 would claim a failed probe that never ran.
//
// A target whose model is auto-detected keeps its detected model across a
// reload as long as its configuration asks for detection; until a probe has
// reported a model, its series carry model="".
func (m *Metrics) SetTargets(targets []TargetSeries) {
	s := m.series
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]TargetSeries, len(targets))
	for _, t := range targets {
		want[t.Name] = t
	}
	for name, old := range s.targets {
		nt, ok := want[name]
		if !ok {
			s.deleteTarget(name)
			delete(s.targets, name)
			continue
		}
		model := nt.Model
		if model == "" && old.Model == "" {
			model = old.model // still auto-detected: keep what was detected
		}
		if model != old.model {
			s.deleteModel(name, old.model)
		}
		for _, mod := range old.Modules {
			if !slices.Contains(nt.Modules, mod) {
				s.deleteModule(name, mod)
			} else if nt.Turns[mod] < old.Turns[mod] {
				m.turns.deleteModule(name, mod)
			}
		}
		m.resetAnswerChecks(name, old.TargetSeries, nt)
		if nt.Endpoint != old.Endpoint {
			m.tlsExpiry.DeleteLabelValues(name)
		}
		if nt.Backend != old.Backend || model != old.model {
			m.targetInfo.DeletePartialMatch(prometheus.Labels{labelTarget: name})
			old.tokenSource, old.reasoningSource = unknownTokenSource, noReasoningSource
		}
		old.TargetSeries = nt
		old.model = model
	}
	for name, t := range want {
		if _, ok := s.targets[name]; !ok {
			s.targets[name] = &targetState{TargetSeries: t, model: t.Model, tokenSource: unknownTokenSource, reasoningSource: noReasoningSource}
		}
	}
	for _, t := range s.targets {
		s.create(t)
	}
}

// create makes every pre-created series of t exist. Creating an existing
// series is a no-op, so this is safe to repeat.
func (s *seriesState) create(t *targetState) {
	m := s.m
	t.setInfo(m)
	m.createAnswerChecks(t)
	m.benchRunning.WithLabelValues(t.Name)
	for _, r := range BenchResults {
		m.benchRuns.WithLabelValues(t.Name, string(r))
	}
	for _, mod := range t.Modules {
		m.skipped.WithLabelValues(t.Name, mod)
		m.lag.WithLabelValues(t.Name, mod)
		lv := []string{t.Name, mod, t.model, string(ModeProbe)}
		for _, h := range m.requestHistograms() {
			h.WithLabelValues(lv...)
		}
		m.promptTokens.WithLabelValues(lv...)
		m.genTokens.WithLabelValues(lv...)
		m.reasoningTokens.WithLabelValues(lv...)
		for _, o := range prober.Outcomes {
			m.requests.WithLabelValues(append(lv, string(o))...)
		}
		m.turns.create(t.Name, mod, t.model, t.Turns[mod])
	}
}

// setInfo sets t's servingprobe_target_info series. The caller deletes
// the old one first when a label of it changed.
func (t *targetState) setInfo(m *Metrics) {
	m.targetInfo.WithLabelValues(t.Name, t.model, t.Backend, t.tokenSource, t.reasoningSource).Set(1)
}

func (s *seriesState) deleteTarget(name string) {
	for _, v := range s.m.targetVecs() {
		v.DeletePartialMatch(prometheus.Labels{labelTarget: name})
	}
}

func (s *seriesState) deleteModel(name, model string) {
	l := prometheus.Labels{labelTarget: name, labelModel: model}
	for _, v := range append(s.m.perRequestVecs(), s.m.probeGaugeVecs()...) {
		v.DeletePartialMatch(l)
	}
}

func (s *seriesState) deleteModule(name, module string) {
	l := prometheus.Labels{labelTarget: name, labelModule: module}
	for _, v := range append(s.m.perRequestVecs(), s.m.probeGaugeVecs()...) {
		v.DeletePartialMatch(l)
	}
	s.m.skipped.DeletePartialMatch(l)
	s.m.answerChecks.DeletePartialMatch(l)
	s.m.lag.DeletePartialMatch(l)
}

// resolve returns the model label for a result of target and whether the
// result may be recorded. It must be called with the read lock held; it
// returns switchTo != "" when the caller must switch the target's detected
// model under the write lock first.
func (s *seriesState) resolve(r *prober.Result, mode Mode) (model string, ok bool, switchTo string) {
	t, ok := s.targets[r.Target]
	if !ok || (mode == ModeProbe && !slices.Contains(t.Modules, r.Module)) {
		// Removed by a reload while the request ran, or never configured.
		// A bench may use any module of the config on a configured target.
		return "", false, ""
	}
	detected := sanitizeModel(r.Model)
	if t.Model != "" || detected == "" {
		// Configured, or nothing usable detected: the model in use.
		return t.model, true, ""
	}
	if detected != t.model {
		return "", true, detected
	}
	return t.model, true, ""
}

// switchModel moves an auto-detected target to a newly detected model: the
// old model's series go, the new model's are created.
func (s *seriesState) switchModel(target, model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[target]
	if !ok || t.Model != "" || t.model == model {
		return
	}
	s.deleteModel(target, t.model)
	s.m.targetInfo.DeletePartialMatch(prometheus.Labels{labelTarget: target})
	t.model = model
	s.create(t)
}

// setSources records where the token counts (tokens) and the reasoning
// count (reasoning) of target's last successful request came from; an
// empty source leaves that label as it is.
func (s *seriesState) setSources(target string, tokens, reasoning prober.TokenSource) {
	if tokens == "" && reasoning == "" {
		return
	}
	same := func(t *targetState) bool {
		return (tokens == "" || t.tokenSource == string(tokens)) && (reasoning == "" || t.reasoningSource == string(reasoning))
	}
	s.mu.RLock()
	t, ok := s.targets[target]
	unchanged := ok && same(t)
	s.mu.RUnlock()
	if !ok || unchanged {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok = s.targets[target]; !ok || same(t) {
		return
	}
	s.m.targetInfo.DeletePartialMatch(prometheus.Labels{labelTarget: target})
	if tokens != "" {
		t.tokenSource = string(tokens)
	}
	if reasoning != "" {
		t.reasoningSource = string(reasoning)
	}
	t.setInfo(s.m)
}

// PrepareBench creates the mode="bench" series of (target, module) at zero,
// so that rate() over a bench window starts from a known zero. Unknown
// targets are ignored.
func (m *Metrics) PrepareBench(target, module string) {
	s := m.series
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.targets[target]
	if !ok {
		return
	}
	lv := []string{target, module, t.model, string(ModeBench)}
	for _, h := range m.requestHistograms() {
		h.WithLabelValues(lv...)
	}
	m.promptTokens.WithLabelValues(lv...)
	m.genTokens.WithLabelValues(lv...)
	m.reasoningTokens.WithLabelValues(lv...)
	for _, o := range prober.Outcomes {
		m.requests.WithLabelValues(append(lv, string(o))...)
	}
}
