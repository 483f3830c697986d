package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// ParseRecord reads one JSONL record back into a Summary: the inverse of
// Record for everything the console table, the report and a comparison
// show. It reads bench_serving's own records as well as ours (Python's bare
// Infinity and NaN included); what a record does not hold stays zero.
// Embedding is such a field: a reader that knows the run's backend sets it
// from the backend's traits. An SLO search's answer line is no run: it is
// refused, and ParseLine reads it.
func ParseRecord(line []byte) (*Summary, error) {
	s, a, err := ParseLine(line)
	if err == nil && a != nil {
		return nil, errors.New("decode record: the line is an SLO search's answer (servingprobe.search_answer), not a run")
	}
	return s, err
}

// ParseLine reads one line of a bench JSONL file: a run's record (s, as
// ParseRecord reads it) or an SLO search's answer (a, the line
// SearchAnswer.Line wrote after the search's points). Exactly one of s
// and a is set when err is nil.
func ParseLine(line []byte) (s *Summary, a *SearchAnswer, err error) {
	clean := pythonToJSON(line)
	var v recordView
	if err := json.Unmarshal(clean, &v.top); err != nil {
		return nil, nil, fmt.Errorf("decode record: %w", err)
	}
	if raw, ok := present(v.top["servingprobe"]); ok {
		if err := json.Unmarshal(raw, &v.sp); err != nil {
			return nil, nil, fmt.Errorf("decode record: servingprobe: %w", err)
		}
	}
	if a, err := readAnswerLine(&v); a != nil || err != nil {
		if err != nil {
			return nil, nil, fmt.Errorf("decode record: %w", err)
		}
		return nil, a, nil
	}
	s, err = parseRun(clean, &v)
	return s, nil, err
}

// parseRun is ParseLine for a run's record.
func parseRun(clean []byte, v *recordView) (*Summary, error) {
	if isVLLMResult(v.top) {
		return parseVLLMResult(v.top) // vllmresult.go
	}
	s := &Summary{}
	for _, rows := range [][]recordField{recordStandard, recordExtras} {
		if err := readFields(s, rows, v.top, v); err != nil {
			return nil, fmt.Errorf("decode record: %w", err)
		}
	}
	var d Details
	if err := json.Unmarshal(clean, &d); err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	if d.InputLens != nil || d.TTFTs != nil {
		// request_reasoning is read with the other arrays (Details'
		// tags); a merge reads its rows by index, so it must have one
		// per request.
		if d.Reasoning != nil && len(d.Reasoning) != len(d.TTFTs) {
			return nil, fmt.Errorf("details: request_reasoning has %d entries for %d requests (ttfts)", len(d.Reasoning), len(d.TTFTs))
		}
		if d.TraceIDs != nil && len(d.TraceIDs) != len(d.TTFTs) {
			return nil, fmt.Errorf("details: trace_ids has %d entries for %d requests (ttfts)", len(d.TraceIDs), len(d.TTFTs))
		}
		if d.CheckFailures != nil && len(d.CheckFailures) != len(d.TTFTs) {
			return nil, fmt.Errorf("details: check_failures has %d entries for %d requests (ttfts)", len(d.CheckFailures), len(d.TTFTs))
		}
		for i, f := range d.CheckFailures {
			if err := f.validate(); err != nil {
				return nil, fmt.Errorf("details: check_failures[%d]: %w", i, err)
			}
		}
		s.Details = &d
	}
	return s, nil
}

func joinComma(v []string) string {
	var b bytes.Buffer
	for i, s := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	return b.String()
}

// jsonNumber reads a number, or the strings our strict JSON writes for
// infinities ("inf"); anything else is 0.
func jsonNumber(raw json.RawMessage) float64 {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "inf", "Infinity":
			return math.Inf(1)
		case "-inf", "-Infinity":
			return math.Inf(-1)
		}
	}
	return 0
}

// pythonToJSON replaces the bare Infinity, -Infinity and NaN that Python's
// json.dumps writes (and bench_serving's records hold) by strings, outside
// string literals, so that encoding/json reads the rest.
func pythonToJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("Infinity")) && !bytes.Contains(b, []byte("NaN")) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(b) {
					i++
					out = append(out, b[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out = append(out, `"-inf"`...)
			i += len("-Infinity") - 1
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out = append(out, `"inf"`...)
			i += len("Infinity") - 1
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out = append(out, `null`...)
			i += len("NaN") - 1
		default:
			out = append(out, c)
		}
	}
	return out
}

// parseServers reads the servingprobe object's server blocks ("server",
// then "server_more") into s.Server, so that a report or a comparison of
// JSONL files shows the block the console showed.
func (s *Summary) parseServers(first, more json.RawMessage) error {
	if len(first) == 0 || string(first) == "null" {
		return nil
	}
	r, err := s.parseServer(first)
	if err != nil {
		return fmt.Errorf("servingprobe.server: %w", err)
	}
	s.Server = append(s.Server, r)
	if len(more) == 0 || string(more) == "null" {
		return nil
	}
	var rest []json.RawMessage
	if err := json.Unmarshal(more, &rest); err != nil {
		return fmt.Errorf("servingprobe.server_more: %w", err)
	}
	for i, raw := range rest {
		r, err := s.parseServer(raw)
		if err != nil {
			return fmt.Errorf("servingprobe.server_more[%d]: %w", i, err)
		}
		s.Server = append(s.Server, r)
	}
	return nil
}

// parseServer is the inverse of serverRecord for everything the block
// shows. It walks the keys in the record's order, so that the latencies,
// counters and gauges come back in the order they were written. Keys it
// does not know (a newer servingprobe's) are skipped; what the record
// derives from the summary (ttft_minus_server_ms, *_ours, the notes on
// token counts) is computed again rather than read. Errors name the key.
func (s *Summary) parseServer(raw json.RawMessage) (servermetrics.Report, error) {
	r := servermetrics.Report{PrefixHitRate: math.NaN()}
	fields, err := objectFields(raw)
	if err != nil {
		return r, err
	}
	var notes []string
	for _, f := range fields {
		var err error
		k := f.key
		switch {
		case k == "source":
			err = json.Unmarshal(f.value, &r.Source)
		case k == "missing":
			err = json.Unmarshal(f.value, &r.Missing)
		case k == "engine":
			err = json.Unmarshal(f.value, &r.Engine)
		case k == "samples":
			err = json.Unmarshal(f.value, &r.SampleCount)
		case k == "sample_errors":
			err = json.Unmarshal(f.value, &r.SampleErrors)
		case k == "notes":
			err = json.Unmarshal(f.value, &notes)
		case k == "unknown_metrics":
			err = json.Unmarshal(f.value, &r.Unknown)
		case k == "prefix_cache_hit_rate":
			err = json.Unmarshal(f.value, &r.PrefixHitRate)
		case k == "series":
			r.Samples, err = parseServerSeries(f.value)
		case slices.Contains(servermetrics.CounterKinds, servermetrics.Kind(k)):
			c := servermetrics.Count{Kind: servermetrics.Kind(k)}
			err = json.Unmarshal(f.value, &c.Delta)
			r.Counters = append(r.Counters, c)
		case strings.HasSuffix(k, "_ms") && slices.Contains(servermetrics.LatencyKinds, servermetrics.Kind(strings.TrimSuffix(k, "_ms"))):
			var l servermetrics.Latency
			l, err = parseServerLatency(servermetrics.Kind(strings.TrimSuffix(k, "_ms")), f.value)
			r.Latencies = append(r.Latencies, l)
		case strings.HasSuffix(k, "_peak") && slices.Contains(servermetrics.GaugeKinds, servermetrics.Kind(strings.TrimSuffix(k, "_peak"))):
			g := servermetrics.GaugeStats{Kind: servermetrics.Kind(strings.TrimSuffix(k, "_peak"))}
			err = json.Unmarshal(f.value, &g.Peak)
			r.Gauges = append(r.Gauges, g)
		case strings.HasSuffix(k, "_mean") && slices.Contains(servermetrics.GaugeKinds, servermetrics.Kind(strings.TrimSuffix(k, "_mean"))):
			kind := servermetrics.Kind(strings.TrimSuffix(k, "_mean"))
			i := slices.IndexFunc(r.Gauges, func(g servermetrics.GaugeStats) bool { return g.Kind == kind })
			if i < 0 {
				err = fmt.Errorf("no %s_peak before it", kind)
				break
			}
			err = json.Unmarshal(f.value, &r.Gauges[i].Mean)
		}
		if err != nil {
			return r, fmt.Errorf("%s: %w", k, err)
		}
	}
	for i, g := range r.Gauges {
		for _, sm := range r.Samples {
			if _, ok := sm.Values[g.Kind]; ok {
				r.Gauges[i].Samples++
			}
		}
	}
	if r.SampleCount == len(r.Samples) {
		r.SampleCount = 0 // every sample is in Samples
	}
	// The record's notes end with the token-count notes, which the block
	// computes from the counters and our totals; keep only the server's.
	if tok := s.serverTokens(&r); len(tok) <= len(notes) && slices.Equal(notes[len(notes)-len(tok):], tok) {
		notes = notes[:len(notes)-len(tok)]
	}
	if len(notes) > 0 {
		r.Notes = notes
	}
	return r, nil
}

// parseServerLatency reads one "<kind>_ms" object: ms back to seconds,
// each percentile with its bucket (an upper bound of null is +Inf).
func parseServerLatency(kind servermetrics.Kind, raw json.RawMessage) (servermetrics.Latency, error) {
	type bucket struct {
		Lower float64  `json:"lower"`
		Upper *float64 `json:"upper"`
	}
	var v struct {
		Metric string  `json:"metric"`
		Count  float64 `json:"count"`
		Mean   float64 `json:"mean"`
		P50    float64 `json:"p50"`
		P90    float64 `json:"p90"`
		P99    float64 `json:"p99"`
		P50B   *bucket `json:"p50_bucket"`
		P90B   *bucket `json:"p90_bucket"`
		P99B   *bucket `json:"p99_bucket"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return servermetrics.Latency{}, err
	}
	l := servermetrics.Latency{Kind: kind, Metric: v.Metric, Count: v.Count}
	if v.Count == 0 {
		return l, nil
	}
	l.Mean = fromMs(v.Mean)
	for _, p := range []struct {
		value float64
		b     *bucket
		e     *servermetrics.Estimate
		name  string
	}{{v.P50, v.P50B, &l.P50, "p50"}, {v.P90, v.P90B, &l.P90, "p90"}, {v.P99, v.P99B, &l.P99, "p99"}} {
		if p.b == nil {
			return l, fmt.Errorf("%s_bucket: missing", p.name)
		}
		p.e.Value, p.e.Lower, p.e.Upper = fromMs(p.value), fromMs(p.b.Lower), math.Inf(1)
		if p.b.Upper != nil {
			p.e.Upper = fromMs(*p.b.Upper)
		}
	}
	return l, nil
}

// parseServerSeries reads the "series" object back into samples: one per
// offset, each with the gauges not null at it.
func parseServerSeries(raw json.RawMessage) ([]servermetrics.Sample, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var at []float64
	if err := json.Unmarshal(v["offsets_s"], &at); err != nil {
		return nil, fmt.Errorf("offsets_s: %w", err)
	}
	out := make([]servermetrics.Sample, len(at))
	for i, sec := range at {
		out[i] = servermetrics.Sample{Offset: time.Duration(math.Round(sec * 1e9)), Values: map[servermetrics.Kind]float64{}}
	}
	for _, k := range servermetrics.GaugeKinds {
		raw, ok := v[string(k)]
		if !ok {
			continue
		}
		var vals []*float64
		if err := json.Unmarshal(raw, &vals); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if len(vals) != len(at) {
			return nil, fmt.Errorf("%s: %d values for %d offsets", k, len(vals), len(at))
		}
		for i, x := range vals {
			if x != nil {
				out[i].Values[k] = *x
			}
		}
	}
	return out, nil
}

// fromMs reads the record's ms (seconds × 1000) back as seconds. For a
// product of 1000 the division finds a float whose product is the same
// again (TestFromMs checks it across magnitudes), so a record read back
// writes the same bytes.
func fromMs(x float64) float64 { return x / 1000 }

// rawField is one key of a JSON object and its value, undecoded.
type rawField struct {
	key   string
	value json.RawMessage
}

// objectFields returns a JSON object's keys and values in their order
// (encoding/json's maps forget it).
func objectFields(raw json.RawMessage) ([]rawField, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("want an object, got %s", raw)
		}
		return nil, err
	}
	var out []rawField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, rawField{t.(string), v})
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, err
	}
	return out, nil
}

// present is a key's value unless the key is absent or null.
func present(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// rawKey is the value of key among fields; nil when it is not there.
func rawKey(fields []rawField, key string) json.RawMessage {
	for _, f := range fields {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// checkDerived compares what a record states (got) with what the summary
// read back from it writes there (want: the writer's own record, so that
// no figure is derived a second way): the keys named, or every key when
// none is. A record whose derived figures do not follow from its inputs
// was not written by this code from one run, and is refused rather than
// shown with numbers that differ from its own. A key the record lacks
// has nothing to disagree with (it is written again from the inputs);
// keys beyond want's (a newer servingprobe's) are not compared. The error
// begins with the path of the first difference (".per_hour: ...").
func checkDerived(want any, got json.RawMessage, keys ...string) error {
	e := &pyfmt.Encoder{Strict: true}
	if err := e.Value(want); err != nil {
		return err
	}
	var w, g any
	if err := json.Unmarshal(e.Bytes(), &w); err != nil {
		return err
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf(": %w", err)
	}
	if wm, ok := w.(map[string]any); ok && len(keys) > 0 {
		only := map[string]any{}
		for _, k := range keys {
			if v, ok := wm[k]; ok {
				only[k] = v
			}
		}
		w = only
	}
	return derivedDiff("", w, g)
}

func derivedDiff(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s, want an object", path, jsonText(got))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := g[k]
			if !ok {
				continue
			}
			if err := derivedDiff(path+"."+k, w[k], gv); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: %s, the record's own figures give %d entries", path, jsonText(got), len(w))
		}
		for i := range w {
			if err := derivedDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
	default:
		if want != got {
			return fmt.Errorf("%s: %s, but the record's own figures give %s", path, jsonText(got), jsonText(want))
		}
	}
	return nil
}

// jsonText is a decoded JSON value as JSON, for an error message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
