package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
)

// VLLMRun is what vLLM's result file says about a run beyond its figures
// (vllm/benchmarks/serve.py, main_async's result_json): the command
// line's settings, as vLLM records them.
type VLLMRun struct {
	Date        time.Time
	Backend     string // --backend, also written as endpoint_type
	Label       string // "": null
	ModelID     string
	TokenizerID string
	NumPrompts  int
	// Metadata are --metadata's KEY=VALUE pairs, in order, written at the
	// top level of the object after num_prompts.
	Metadata       [][2]string
	RequestRate    float64 // +Inf is written as "inf"
	Burstiness     float64
	MaxConcurrency int // 0: null
	RampUp         string
	RampUpStartRPS float64
	RampUpEndRPS   float64
	// Detailed is --save-detailed: the per-request arrays are kept.
	Detailed bool
}

// VLLMDate is vLLM's date format, datetime.now().strftime("%Y%m%d-%H%M%S").
const VLLMDate = "20060102-150405"

// VLLMResultFilename is vLLM's result file name when --result-filename
// is not given (serve.py, compute_result_filename), without the result
// directory.
func VLLMResultFilename(run VLLMRun, label string, maxConcurrency int) string {
	if label == "" {
		label = run.Backend
	}
	model := run.ModelID[strings.LastIndex(run.ModelID, "/")+1:]
	conc := ""
	if maxConcurrency > 0 {
		conc = fmt.Sprintf("-concurrency%d", maxConcurrency)
	}
	dt := run.Date.Format(VLLMDate)
	if run.RampUp != "" {
		// vLLM's --ramp-up-start-rps and --ramp-up-end-rps are ints.
		return fmt.Sprintf("%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json", label, run.RampUp, int(run.RampUpStartRPS), int(run.RampUpEndRPS), conc, model, dt)
	}
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, pyfmt.Float(run.RequestRate), conc, model, dt)
}

// VLLMResult is the JSON object vLLM's --save-result writes: its keys,
// in its order and with its types, then servingprobe's own figures under
// "servingprobe", as in the JSONL record. Latencies are vLLM's: seconds
// in the per-request arrays, milliseconds in the statistics.
func (s *Summary) VLLMResult(run VLLMRun) ([]byte, error) {
	r := record{
		{"date", run.Date.Format(VLLMDate)},
		{"endpoint_type", run.Backend},
		{"backend", run.Backend},
		{"label", nullString(run.Label)},
		{"model_id", run.ModelID},
		{"tokenizer_id", nullString(run.TokenizerID)},
		{"num_prompts", run.NumPrompts},
	}
	for _, kv := range run.Metadata {
		r = append(r, field{kv[0], kv[1]})
	}
	var rate any = run.RequestRate
	if math.IsInf(run.RequestRate, 1) {
		rate = "inf"
	}
	r = append(r, field{"request_rate", rate}, field{"burstiness", run.Burstiness}, field{"max_concurrency", nullInt(run.MaxConcurrency)})
	if run.RampUp != "" {
		r = append(r, field{"ramp_up_strategy", run.RampUp}, field{"ramp_up_start_rps", int(run.RampUpStartRPS)}, field{"ramp_up_end_rps", int(run.RampUpEndRPS)})
	}
	var goodput any
	if len(s.Goodput) > 0 {
		goodput = s.RequestGoodput
	}
	r = append(r,
		field{"duration", s.Duration},
		field{"completed", s.Completed},
		field{"failed", s.Failed},
		field{"total_input_tokens", s.TotalInputTokens},
		field{"total_output_tokens", s.TotalOutputTokens},
		field{"request_throughput", s.RequestThroughput},
		field{"request_goodput", goodput},
		field{"output_throughput", s.OutputThroughput},
		field{"total_token_throughput", s.TotalThroughput},
	)
	if d := s.Details; d != nil {
		// latencies and queue_times stay without --save-detailed: vLLM
		// deletes only the other arrays.
		n := len(d.TTFTs)
		lat, queue := make([]float64, n), make([]float64, n)
		for i := range n {
			if i < len(d.EndTimes) && i < len(d.SentTimes) && d.EndTimes[i] >= 0 && d.SentTimes[i] >= 0 && d.Outcomes[i] == "success" {
				lat[i] = d.EndTimes[i] - d.SentTimes[i]
			}
			if i < len(d.SentTimes) && i < len(d.ScheduledTimes) && d.SentTimes[i] >= 0 {
				queue[i] = d.SentTimes[i] - d.ScheduledTimes[i]
			}
		}
		if run.Detailed {
			r = append(r, field{"input_lens", d.InputLens}, field{"output_lens", d.OutputLens}, field{"ttfts", d.TTFTs}, field{"itls", d.ITLs})
		}
		r = append(r, field{"latencies", lat})
		if run.Detailed {
			r = append(r, field{"start_times", d.SentTimes})
		}
		r = append(r, field{"queue_times", queue})
		if run.Detailed {
			errs := make([]string, len(d.Errors))
			copy(errs, d.Errors)
			r = append(r, field{"generated_texts", d.GeneratedTexts}, field{"errors", errs})
		}
	}
	r = append(r,
		field{"max_output_tokens_per_s", s.MaxOutputTokensPerS},
		field{"max_concurrent_requests", s.MaxConcurrentRequests},
		// rtfx is the input audio's seconds per second of run, which
		// servingprobe does not measure; vLLM writes 0.0 for text.
		field{"rtfx", 0.0},
	)
	for _, m := range s.Percentiles {
		r = append(r, field{"mean_" + m.Metric + "_ms", m.Mean}, field{"median_" + m.Metric + "_ms", m.Median}, field{"std_" + m.Metric + "_ms", m.Std})
		for _, p := range m.Percentiles {
			r = append(r, field{"p" + vllmPercentileWord(p.P) + "_" + m.Metric + "_ms", p.Value})
		}
	}
	own, err := s.Record(JSONOptions{Strict: true})
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(own, &top); err != nil {
		return nil, err
	}
	if sp, ok := top["servingprobe"]; ok {
		r = append(r, field{"servingprobe", sp})
	}
	e := &pyfmt.Encoder{Strict: true}
	if err := e.Object(r); err != nil {
		return nil, err
	}
	return e.Bytes(), nil
}

// vllmPercentileWord is vLLM's p_word: 99 for 99.0, 99.9 as it is.
func vllmPercentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return pyfmt.Float(p)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// WriteVLLMResult writes VLLMResult to path as vLLM does: the file
// replaced, or with appendTo the object appended after a newline when the
// file is not empty (vLLM's --append-result; the file is then a JSON
// object per line, with no newline after the last).
func (s *Summary) WriteVLLMResult(path string, run VLLMRun, appendTo bool) error {
	b, err := s.VLLMResult(run)
	if err != nil {
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	if appendTo {
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
			b = append([]byte("\n"), b...)
		}
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteVLLMTable writes the result block vLLM's bench serve prints
// (serve.py, benchmark()): its lines where they differ from
// bench_serving's table, the configured rate and concurrency, no input or
// retokenized throughput lines, and a section per --percentile-metrics
// metric at --metric-percentiles.
func (s *Summary) WriteVLLMTable(w io.Writer, run VLLMRun) error {
	bw := bufio.NewWriter(w)
	t := &tableWriter{w: bw}
	t.line(center(" Serving Benchmark Result ", '=', 50))
	t.int("Successful requests:", s.Completed)
	t.int("Failed requests:", s.Failed)
	if run.MaxConcurrency > 0 {
		t.int("Maximum request concurrency:", run.MaxConcurrency)
	}
	if !math.IsInf(run.RequestRate, 1) {
		t.f2("Request rate configured (RPS):", run.RequestRate)
	}
	t.f2("Benchmark duration (s):", s.Duration)
	t.int("Total input tokens:", s.TotalInputTokens)
	t.int("Total generated tokens:", s.TotalOutputTokens)
	t.f2("Request throughput (req/s):", s.RequestThroughput)
	if len(s.Goodput) > 0 {
		t.f2("Request goodput (req/s):", s.RequestGoodput)
	}
	t.f2("Output token throughput (tok/s):", s.OutputThroughput)
	t.f2("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS)
	t.f2("Peak concurrent requests:", float64(s.MaxConcurrentRequests))
	t.f2("Total token throughput (tok/s):", s.TotalThroughput)
	headers := map[string][2]string{
		MetricTTFT:                     {"TTFT", "Time to First Token"},
		MetricTPOT:                     {"TPOT", "Time per Output Token (excl. 1st token)"},
		MetricITL:                      {"ITL", "Inter-token Latency"},
		MetricE2EL:                     {"E2EL", "End-to-end Latency"},
		MetricClientQueueTime:          {"Client Queue Time", "Client-side Queueing"},
		MetricE2ELIncludingClientQueue: {"E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency"},
	}
	for _, m := range s.Percentiles {
		h, ok := headers[m.Metric]
		if !ok {
			h = [2]string{strings.ToUpper(m.Metric), m.Metric}
		}
		t.line(center(h[1], '-', 50))
		t.f2("Mean "+h[0]+" (ms):", m.Mean)
		t.f2("Median "+h[0]+" (ms):", m.Median)
		for _, p := range m.Percentiles {
			t.f2("P"+vllmPercentileWord(p.P)+" "+h[0]+" (ms):", p.Value)
		}
	}
	t.line(strings.Repeat("=", 50))
	return bw.Flush()
}

// isVLLMResult reports whether a record's keys are a vLLM result file's:
// endpoint_type and the median TTFT vLLM writes, which bench_serving's
// records do not have.
func isVLLMResult(top map[string]json.RawMessage) bool {
	_, ep := top["endpoint_type"]
	_, model := top["model_id"]
	return ep && model
}

// parseVLLMResult maps a vLLM result object onto a Summary: the run's
// figures, its statistics (mean, median, std and the percentiles it
// names pXX_metric_ms) and, with --save-detailed, the per-request arrays,
// so that compare and report read a vllm bench serve run beside ours.
func parseVLLMResult(top map[string]json.RawMessage) (*Summary, error) {
	s := &Summary{}
	num := func(k string) float64 { return jsonNumber(top[k]) }
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(top[k], &v)
		return v
	}
	s.Backend = str("backend")
	s.Tag = str("label")
	s.Duration = num("duration")
	s.Completed = int(num("completed"))
	s.Failed = int(num("failed"))
	s.Requests = s.Completed + s.Failed
	s.TotalInputTokens = int(num("total_input_tokens"))
	s.TotalOutputTokens = int(num("total_output_tokens"))
	s.RequestThroughput = num("request_throughput")
	s.OutputThroughput = num("output_throughput")
	s.TotalThroughput = num("total_token_throughput")
	s.MaxOutputTokensPerS = num("max_output_tokens_per_s")
	s.MaxConcurrentRequests = int(num("max_concurrent_requests"))
	if s.Duration > 0 {
		s.InputThroughput = float64(s.TotalInputTokens) / s.Duration
	}
	if raw, ok := present(top["request_goodput"]); ok {
		s.RequestGoodput = jsonNumber(raw)
	}
	s.MaxConcurrency = int(num("max_concurrency"))
	if str("request_rate") == "inf" {
		s.RequestRate = Rate(math.Inf(1))
	} else {
		s.RequestRate = Rate(num("request_rate"))
	}
	stats := map[string]*Stats{MetricTTFT: &s.TTFT, MetricTPOT: &s.TPOT, MetricITL: &s.ITL, MetricE2EL: &s.E2ELatency}
	for _, metric := range PercentileMetricNames {
		if _, ok := top["mean_"+metric+"_ms"]; !ok {
			continue
		}
		m := MetricStats{Metric: metric, Mean: num("mean_" + metric + "_ms"), Median: num("median_" + metric + "_ms"), Std: num("std_" + metric + "_ms")}
		for k, raw := range top {
			rest, ok := strings.CutPrefix(k, "p")
			if !ok || !strings.HasSuffix(rest, "_"+metric+"_ms") {
				continue
			}
			p, err := strconv.ParseFloat(strings.TrimSuffix(rest, "_"+metric+"_ms"), 64)
			if err != nil {
				continue
			}
			m.Percentiles = append(m.Percentiles, PercentileValue{P: p, Value: jsonNumber(raw)})
		}
		slices.SortFunc(m.Percentiles, func(a, b PercentileValue) int { return cmp.Compare(a.P, b.P) })
		s.Percentiles = append(s.Percentiles, m)
		if st := stats[metric]; st != nil {
			st.Mean, st.Median, st.Std = m.Mean, m.Median, m.Std
			for _, p := range m.Percentiles {
				switch p.P {
				case 90:
					st.P90 = p.Value
				case 95:
					st.P95 = p.Value
				case 99:
					st.P99 = p.Value
				}
			}
		}
	}
	if raw, ok := present(top["ttfts"]); ok {
		var d Details
		if err := json.Unmarshal(raw, &d.TTFTs); err != nil {
			return nil, fmt.Errorf("decode vLLM result: ttfts: %w", err)
		}
		for k, p := range map[string]any{"input_lens": &d.InputLens, "output_lens": &d.OutputLens, "itls": &d.ITLs, "generated_texts": &d.GeneratedTexts} {
			if raw, ok := present(top[k]); ok {
				if err := json.Unmarshal(raw, p); err != nil {
					return nil, fmt.Errorf("decode vLLM result: %s: %w", k, err)
				}
			}
		}
		if raw, ok := present(top["errors"]); ok {
			var errs []*string // vLLM's errors are "" or null for a success
			if err := json.Unmarshal(raw, &errs); err != nil {
				return nil, fmt.Errorf("decode vLLM result: errors: %w", err)
			}
			d.Errors = make([]string, len(errs))
			for i, e := range errs {
				if e != nil {
					d.Errors[i] = *e
				}
			}
		}
		if len(d.InputLens) != len(d.TTFTs) && d.InputLens != nil {
			return nil, errors.New("decode vLLM result: input_lens and ttfts differ in length")
		}
		s.Details = &d
	}
	return s, nil
}
