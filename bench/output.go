package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// center is Python's "{s:{c}^{n}}".format(...): odd padding goes right.
func center(s string, fill byte, width int) string {
	pad := width - len(s)
	if pad <= 0 {
		return s
	}
	l := pad / 2
	return strings.Repeat(string(fill), l) + s + strings.Repeat(string(fill), pad-l)
}

// Center is center for other tables (the sweep's), so that every table
// pads its headers the same way.
func Center(s string, fill byte, width int) string { return center(s, fill, width) }

// tableWriter writes bench_serving's "{:<40} {:<10}" rows; with sections
// set it also keeps each row under the line above it (TableSections).
type tableWriter struct {
	w        *bufio.Writer
	sections *[]TableSection
}

func (t *tableWriter) line(s string) {
	t.w.WriteString(s + "\n")
	if t.sections != nil {
		*t.sections = append(*t.sections, TableSection{Title: strings.Trim(s, "=- ")})
	}
}

func (t *tableWriter) row(label, value string) {
	t.w.WriteString(fmt.Sprintf("%-40s %-10s\n", label, value))
	if t.sections != nil && len(*t.sections) > 0 {
		last := &(*t.sections)[len(*t.sections)-1]
		last.Rows = append(last.Rows, TableRow{label, value})
	}
}

func (t *tableWriter) f2(label string, v float64) { t.row(label, pyfmt.Fixed2(v)) }

func (t *tableWriter) int(label string, v int) { t.row(label, strconv.Itoa(v)) }

// WriteTable writes bench_serving's console table (newest layout, byte for
// byte: labels, order, widths, trailing spaces and number formats), then
// servingprobe's extra block below it, so that parsers of the standard
// table see it unchanged.
func (s *Summary) WriteTable(w io.Writer) error {
	return s.writeTable(&tableWriter{w: bufio.NewWriter(w)})
}

func (s *Summary) writeTable(t *tableWriter) error {
	t.line("")
	t.line(center(" Serving Benchmark Result ", '=', 50))
	t.row("Backend:", s.Backend)
	rate := pyfmt.Float(float64(s.RequestRate))
	if s.UseTraceTimestamps {
		rate = "trace"
	}
	t.row("Traffic request rate:", rate)
	conc := "not set"
	if s.MaxConcurrency > 0 {
		conc = strconv.Itoa(s.MaxConcurrency)
	}
	t.row("Max request concurrency:", conc)
	t.int("Successful requests:", s.Completed)
	t.f2("Benchmark duration (s):", s.Duration)
	t.int("Total input tokens:", s.TotalInputTokens)
	t.int("Total input text tokens:", s.TotalInputTextTokens)
	if s.DatasetName == "image" || s.DatasetName == "mmmu" {
		t.int("Total input vision tokens:", s.TotalInputVisionTokens)
	}
	switch n := s.TemplateInputTokens(); {
	case n > 0:
		t.int("Chat template and other server tokens:", n)
	case n < 0:
		// A template adds tokens, it never takes any away: a server that
		// counted fewer than the dataset's text tokens counts with
		// another tokenizer, and a negative count would hide that.
		t.row("Tokenizer mismatch:", fmt.Sprintf("the server counted %d fewer input tokens than our tokenizer; it is not the server model's (--tokenizer)", -n))
	}
	emb := s.Embedding
	if !emb {
		t.int("Total generated tokens:", s.TotalOutputTokens)
		t.int("Total generated tokens (retokenized):", s.TotalOutputTokensRetokenized)
	}
	t.f2("Request throughput (req/s):", s.RequestThroughput)
	t.f2("Input token throughput (tok/s):", s.InputThroughput)
	if !emb {
		t.f2("Output token throughput (tok/s):", s.OutputThroughput)
		t.f2("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS)
	}
	t.int("Peak concurrent requests:", s.MaxConcurrentRequests)
	if !emb {
		t.f2("Total token throughput (tok/s):", s.TotalThroughput)
	}
	t.f2("Concurrency:", s.Concurrency)
	if s.AcceptLength != nil && *s.AcceptLength != 0 {
		t.f2("Accept length:", *s.AcceptLength)
	}
	t.line(center("End-to-End Latency", '-', 50))
	t.f2("Mean E2E Latency (ms):", s.E2ELatency.Mean)
	t.f2("Median E2E Latency (ms):", s.E2ELatency.Median)
	t.f2("P90 E2E Latency (ms):", s.E2ELatency.P90)
	t.f2("P95 E2E Latency (ms):", s.E2ELatency.P95)
	t.f2("P99 E2E Latency (ms):", s.E2ELatency.P99)
	if !emb {
		for _, sec := range []struct {
			header, name string
			st           Stats
		}{
			{"Time to First Token", "TTFT", s.TTFT},
			{"Time per Output Token (excl. 1st token)", "TPOT", s.TPOT},
			{"Inter-Token Latency", "ITL", s.ITL},
		} {
			t.line(center(sec.header, '-', 50))
			t.f2("Mean "+sec.name+" (ms):", sec.st.Mean)
			t.f2("Median "+sec.name+" (ms):", sec.st.Median)
			t.f2("P90 "+sec.name+" (ms):", sec.st.P90)
			t.f2("P95 "+sec.name+" (ms):", sec.st.P95)
			t.f2("P99 "+sec.name+" (ms):", sec.st.P99)
		}
		t.f2("Max ITL (ms):", s.ITL.Max)
	}
	s.writeCacheReport(t)
	t.line(strings.Repeat("=", 50))
	s.writeExtras(t)
	return t.w.Flush()
}

// writeExtras writes servingprobe's block: failures by outcome, the rate
// the pacer planned and the rate achieved, client queue time, goodput, any
// vLLM-style percentiles, and how the numbers above were taken (not
// streamed, sketches, compat).
func (s *Summary) writeExtras(t *tableWriter) {
	t.line(center(" servingprobe ", '=', 50))
	t.int("Total requests:", s.Requests)
	if s.Stopped != "" || s.NotSent > 0 {
		t.int("Prompts not sent:", s.NotSent)
		t.row("Stopped early:", strings.ReplaceAll(cmp.Or(s.Stopped, "yes"), "_", " "))
	}
	t.int("Failed requests:", s.Failed)
	for _, o := range prober.Outcomes {
		if n := s.Outcomes[o]; n > 0 {
			t.int("  "+string(o)+":", n)
		}
	}
	s.writeEngineNotes(t)
	if len(s.Clocks) > 0 {
		t.row("Timestamps:", s.clocksText())
	}
	t.f2("Scheduled request rate (req/s):", float64(s.ScheduledRequestRate))
	t.f2("Actual request rate (req/s):", float64(s.ActualRequestRate))
	s.writeEmbeddingBatch(t)
	if len(s.Goodput) > 0 {
		t.f2("Request goodput (req/s):", s.RequestGoodput)
		t.int("Good requests:", s.GoodRequests)
	}
	t.line(center("Client Queue Time", '-', 50))
	t.f2("Mean client queue time (ms):", s.ClientQueue.Mean)
	t.f2("Median client queue time (ms):", s.ClientQueue.Median)
	t.f2("P99 client queue time (ms):", s.ClientQueue.P99)
	t.f2("Mean E2E incl. queue (ms):", s.E2EIncludingQueue.Mean)
	t.f2("P99 E2E incl. queue (ms):", s.E2EIncludingQueue.P99)
	s.writeValidity(t)
	s.writeConversations(t)
	if r := s.Reasoning; r != nil {
		t.line(center("Reasoning and Answer", '-', 50))
		t.int("Requests with reasoning:", r.Requests)
		t.int("  reasoning tokens counted:", r.CountedRequests)
		t.int("Reasoning tokens:", r.ReasoningTokens)
		t.int("Answer tokens:", r.AnswerTokens)
		t.f2("Mean TTFAT (ms):", r.TTFAT.Mean)
		t.f2("Median TTFAT (ms):", r.TTFAT.Median)
		t.f2("P99 TTFAT (ms):", r.TTFAT.P99)
		t.f2("Mean answer TPOT (ms):", r.AnswerTPOT.Mean)
		t.f2("Median answer TPOT (ms):", r.AnswerTPOT.Median)
		t.f2("P99 answer TPOT (ms):", r.AnswerTPOT.P99)
		t.f2("Mean answer ITL (ms):", r.AnswerITL.Mean)
		t.f2("Median answer ITL (ms):", r.AnswerITL.Median)
		for _, p := range r.answerITLPercentiles() {
			t.f2("P"+percentileWord(p.P)+" answer ITL (ms):", p.Value)
		}
	}
	for _, m := range s.Percentiles {
		l := metricLabels[m.Metric]
		t.line(center(l.header, '-', 50))
		t.f2("Mean "+l.name+" (ms):", m.Mean)
		t.f2("Median "+l.name+" (ms):", m.Median)
		for _, p := range m.Percentiles {
			t.f2("P"+percentileWord(p.P)+" "+l.name+" (ms):", p.Value)
		}
	}
	s.writeCI(t)
	if s.NotStreamed > 0 && !s.Embedding {
		// An embedding is never streamed, and its table has no TTFT or
		// TPOT for the row to qualify.
		t.row("Not streamed:", fmt.Sprintf("%d requests; TTFT and TPOT from the whole response", s.NotStreamed))
	}
	if s.Stats == StatsSketch {
		t.row("Latency statistics:", fmt.Sprintf("sketch, within %g%%; peaks on a 10 ms grid", SketchRelativeError*100))
	}
	if c := s.Compat.String(); c != "" {
		t.row("Compat:", c)
	}
	s.writeServer(t)
	s.writeCostEnergy(t)
	s.writeShardRows(t)
	t.line(strings.Repeat("=", 50))
}

// clocksText is the Timestamps row: the results per clock, e.g.
// "kernel 998, user 2".
func (s *Summary) clocksText() string {
	var parts []string
	for _, c := range prober.Clocks {
		if n := s.Clocks[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// JSONOptions control Record and AppendJSONL.
type JSONOptions struct {
	// Strict writes valid JSON: an infinite rate becomes the string "inf"
	// (as vLLM writes it) instead of bench_serving's bare Infinity, and NaN
	// becomes null.
	Strict bool
	// Details appends the per-request arrays (--output-details), if the
	// summary kept them.
	Details bool
	// StandardOnly leaves out servingprobe's keys, so that the record has
	// exactly bench_serving's keys.
	StandardOnly bool
}

// Record returns the JSONL line bench_serving appends to --output-file: the
// same keys in the same order, numbers and strings as Python's json.dumps
// writes them, and a trailing newline. servingprobe's keys follow the
// standard ones (request_goodput and p{P}_{metric}_ms as vLLM names them,
// and a "servingprobe" object), then the details.
func (s *Summary) Record(o JSONOptions) ([]byte, error) {
	if o.Details && s.Details == nil && s.SpooledDetails != nil {
		var b bytes.Buffer
		err := s.WriteRecord(&b, o)
		return b.Bytes(), err
	}
	return s.record(o)
}

// record is Record with the details in memory, if any: the rows of
// recordfields.go, then the details.
func (s *Summary) record(o JSONOptions) ([]byte, error) {
	r := writeFields(s, recordStandard, nil)
	if !o.StandardOnly {
		r = writeFields(s, recordExtras, r)
	}
	if o.Details && s.Details != nil {
		d := s.Details
		r = append(r,
			field{"input_lens", d.InputLens},
			field{"output_lens", d.OutputLens},
			field{"ttfts", d.TTFTs},
			field{"itls", d.ITLs},
			field{"generated_texts", d.GeneratedTexts},
			field{"errors", d.Errors},
		)
		if !o.StandardOnly {
			r = append(r,
				field{"scheduled_times", d.ScheduledTimes},
				field{"sent_times", d.SentTimes},
				field{"first_token_times", d.FirstTokenTimes},
				field{"end_times", d.EndTimes},
				field{"request_outcomes", d.Outcomes},
			)
			if d.ServerTimings != nil {
				r = append(r, field{"server_timings", d.ServerTimings})
			}
			if d.Reasoning != nil {
				r = append(r, field{"request_reasoning", d.Reasoning})
			}
			if d.TraceIDs != nil {
				r = append(r, field{"trace_ids", d.TraceIDs})
			}
			if d.CheckFailures != nil {
				r = append(r, field{"check_failures", d.CheckFailures})
			}
		}
	}
	e := &pyfmt.Encoder{Strict: o.Strict}
	if err := e.Object(r); err != nil {
		return nil, err
	}
	e.WriteByte('\n')
	return e.Bytes(), nil
}

// WriteRecord writes Record's line to w. Details kept on disk
// (SpooledDetails) are streamed from there, so that the line is never
// whole in memory.
func (s *Summary) WriteRecord(w io.Writer, o JSONOptions) error {
	if !o.Details || s.Details != nil || s.SpooledDetails == nil {
		line, err := s.record(o)
		if err != nil {
			return err
		}
		_, err = w.Write(line)
		return err
	}
	o.Details = false
	line, err := s.record(o)
	if err != nil {
		return err
	}
	// The record without the details, its closing brace and newline cut,
	// then the arrays, then those again.
	if _, err := w.Write(line[:len(line)-2]); err != nil {
		return err
	}
	if err := s.SpooledDetails.write(w, o); err != nil {
		return err
	}
	_, err = io.WriteString(w, "}\n")
	return err
}

// AppendJSONL appends the record to path, creating the file if needed,
// through a file opened with O_APPEND, as bench_serving's open(path, "a").
// A failed append leaves the file as it was: it is truncated back to its
// old size, so that a full disk cannot leave half a record for the next
// run's record to be glued to. A file that does not end in a newline (a
// record cut short by an older writer) gets one first, so that the new
// record is a line of its own.
func (s *Summary) AppendJSONL(path string, o JSONOptions) error {
	var line bytes.Buffer
	if s.SpooledDetails == nil || !o.Details {
		// Whole before the file is opened: an encoding error leaves it as
		// it was.
		if err := s.WriteRecord(&line, o); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	canRead := true
	if errors.Is(err, os.ErrPermission) {
		// A file we may write but not read: append without looking at
		// its last byte.
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		canRead = false
	}
	if err != nil {
		return err
	}
	err = appendRecord(f, canRead, func(w io.Writer) error {
		if line.Len() > 0 {
			_, err := w.Write(line.Bytes())
			return err
		}
		return s.WriteRecord(w, o)
	})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	return nil
}

// appendFile is what appendRecord needs of an *os.File opened for
// appending; tests wrap one to fail a write part of the way through.
type appendFile interface {
	io.Writer
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// appendRecord appends what write writes to f, after a newline if f does
// not end in one (when canRead), and syncs it. On any error a regular file is truncated
// back to the size it had; the error says whether that worked.
func appendRecord(f appendFile, canRead bool, write func(io.Writer) error) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// Pipes and devices (/dev/stdout) can neither be read back nor
	// truncated: their bytes are gone once written.
	regular := fi.Mode().IsRegular()
	old := fi.Size()
	w := bufio.NewWriterSize(f, 1<<20)
	if regular && canRead && old > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], old-1); err != nil {
			return fmt.Errorf("read the last byte: %w", err)
		}
		if last[0] != '\n' {
			_ = w.WriteByte('\n')
		}
	}
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil && regular {
		// A write the kernel accepted may still fail to reach the disk;
		// the record is reported written only once it has.
		err = f.Sync()
	}
	if err == nil || !regular {
		return err
	}
	if terr := f.Truncate(old); terr != nil {
		return fmt.Errorf("%w; truncating back to %d bytes failed too, the file may end in a partial record: %v", err, old, terr)
	}
	return fmt.Errorf("%w (the file is left as it was, %d bytes)", err, old)
}

// DefaultOutputFile is bench_serving's output file name when --output-file
// is not given, with the month and day taken from now in local time.
func DefaultOutputFile(p Params, now time.Time) string {
	mmdd := now.Format("0102")
	switch {
	case p.Dataset == "image":
		return fmt.Sprintf("%s_%s_%d_%d_%d_%dimgs_%s.jsonl", p.Backend, mmdd, p.NumPrompts,
			p.RandomInputLen, p.RandomOutputLen, p.ImageCount, p.ImageResolution)
	case strings.HasPrefix(p.Dataset, "random"):
		return fmt.Sprintf("%s_%s_%d_%d_%d.jsonl", p.Backend, mmdd, p.NumPrompts, p.RandomInputLen, p.RandomOutputLen)
	default:
		return fmt.Sprintf("%s_%s_%d_%s.jsonl", p.Backend, mmdd, p.NumPrompts, p.Dataset)
	}
}

// answerITLPercentiles are the answer ITL's percentiles the table and the
// record show: the run's --metric-percentiles when it has them for the
// ITL, else the P99.
func (r *ReasoningSummary) answerITLPercentiles() []PercentileValue {
	if r.AnswerITLPercentiles != nil {
		return r.AnswerITLPercentiles
	}
	return []PercentileValue{{P: 99, Value: r.AnswerITL.P99}}
}

// itlPercentiles are the run's --metric-percentiles when its
// --percentile-metrics name the ITL, else nil: the percentiles the answer
// ITL is reported at beside the ITL's own.
func itlPercentiles(metrics []string, percentiles []float64) []float64 {
	if !slices.Contains(metrics, MetricITL) {
		return nil
	}
	return percentiles
}

// field is one key of the record's ordered objects.
type field struct {
	key   string
	value any
}

// record is an ordered object of the record, as a Python dict keeps
// insertion order; pyfmt.Encoder writes it (pyfmt.Fields).
type record []field

// Len implements pyfmt.Fields.
func (r record) Len() int { return len(r) }

// Field implements pyfmt.Fields.
func (r record) Field(i int) (string, any) { return r[i].key, r[i].value }
