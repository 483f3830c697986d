package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// detailSpool keeps --output-details on disk: each request's row is
// appended to a temporary file as it finishes, and the record's arrays are
// written from it (Summary.WriteRecord), so that the details cost 12 bytes
// a request in memory instead of the request's generated text, its gaps as
// float64 and its times.
//
// The file is unlinked as soon as it is made where the system allows it
// (it then disappears with the process, whatever happens), else when the
// spool is closed.
type detailSpool struct {
	f       *os.File
	path    string // still to remove on close; "" once unlinked
	w       *bufio.Writer
	size    int64
	offsets []int64  // by request index; -1 where none was added
	lens    []uint32 // row lengths
	row     []byte
	err     error // the first write error, reported when the record is written
	// server is set once a row carries server timings, reasoning once a
	// row reasoned: the record then has their array, as the in-memory
	// details do.
	server, reasoning bool
	// trace is set once a row carries a trace id, checks once a row was
	// judged.
	trace, checks bool
}

func newDetailSpool() (*detailSpool, error) {
	f, err := os.CreateTemp("", "servingprobe-details-*")
	if err != nil {
		return nil, fmt.Errorf("details spool: %w", err)
	}
	sp := &detailSpool{f: f, path: f.Name(), w: bufio.NewWriterSize(f, 256<<10)}
	if os.Remove(f.Name()) == nil {
		sp.path = ""
	}
	return sp, nil
}

// add appends request i's row to the file.
func (sp *detailSpool) add(i int, r detailRow, gaps itlRange) {
	b := sp.row[:0]
	b = binary.LittleEndian.AppendUint64(b, uint64(r.inputLen))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.outputLen))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.ttft))
	for _, t := range r.times {
		var ns int64
		if !t.IsZero() {
			ns = t.UnixNano()
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(ns))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(gaps.n))
	for v := range gaps.all {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	if r.traceID != "" {
		sp.trace = true
	}
	for _, s := range []string{r.text, r.err, r.outcome, r.traceID} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	if st := r.server; st != nil {
		sp.server = true
		b = append(b, 1)
		for _, v := range []float64{st.TotalDuration, st.LoadDuration, st.PromptEvalDuration, st.EvalDuration, st.FirstTokenDuration, st.QueueDuration} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(st.PromptEvalCount))
		b = binary.LittleEndian.AppendUint64(b, uint64(st.EvalCount))
		b = binary.LittleEndian.AppendUint64(b, uint64(st.PromptCachedCount))
	} else {
		b = append(b, 0)
	}
	if rs := r.reasoning; rs != nil {
		sp.reasoning = true
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint64(b, uint64(rs.Tokens))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(rs.TTFAT))
		b = binary.LittleEndian.AppendUint64(b, uint64(rs.AnswerITLs))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(rs.Source)))
		b = append(b, rs.Source...)
	} else {
		b = append(b, 0)
	}
	if r.checks != nil {
		sp.checks = true
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.checks)))
		for _, c := range r.checks {
			for _, s := range []string{string(c.Check), string(c.Result), c.Reason} {
				b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
				b = append(b, s...)
			}
		}
	} else {
		b = append(b, 0)
	}
	sp.row = b
	for len(sp.offsets) <= i {
		sp.offsets = append(sp.offsets, -1)
		sp.lens = append(sp.lens, 0)
	}
	sp.offsets[i], sp.lens[i] = sp.size, uint32(len(b))
	if _, err := sp.w.Write(b); err != nil && sp.err == nil {
		sp.err = fmt.Errorf("details spool: %w", err)
	}
	sp.size += int64(len(b))
}

// read returns row i; a request never added reads as the in-memory
// Details' zero row.
func (sp *detailSpool) read(i int) (detailRow, error) {
	if sp.offsets[i] < 0 {
		return detailRow{}, nil
	}
	if cap(sp.row) < int(sp.lens[i]) {
		sp.row = make([]byte, sp.lens[i])
	}
	b := sp.row[:sp.lens[i]]
	if _, err := sp.f.ReadAt(b, sp.offsets[i]); err != nil {
		return detailRow{}, fmt.Errorf("details spool: %w", err)
	}
	u64 := func() uint64 { v := binary.LittleEndian.Uint64(b); b = b[8:]; return v }
	u32 := func() uint32 { v := binary.LittleEndian.Uint32(b); b = b[4:]; return v }
	var r detailRow
	r.inputLen, r.outputLen = int(int64(u64())), int(int64(u64()))
	r.ttft = math.Float64frombits(u64())
	for k := range r.times {
		if ns := int64(u64()); ns != 0 {
			r.times[k] = time.Unix(0, ns)
		}
	}
	r.itls = make([]float64, u32())
	for k := range r.itls {
		r.itls[k] = math.Float64frombits(u64())
	}
	str := func() string { n := u32(); s := string(b[:n]); b = b[n:]; return s }
	r.text, r.err, r.outcome, r.traceID = str(), str(), str(), str()
	if b[0] == 1 {
		b = b[1:]
		f := func() float64 { return math.Float64frombits(u64()) }
		st := &ServerTiming{}
		st.TotalDuration, st.LoadDuration, st.PromptEvalDuration, st.EvalDuration, st.FirstTokenDuration, st.QueueDuration = f(), f(), f(), f(), f(), f()
		st.PromptEvalCount, st.EvalCount, st.PromptCachedCount = int(int64(u64())), int(int64(u64())), int(int64(u64()))
		r.server = st
	} else {
		b = b[1:]
	}
	if b[0] == 1 {
		b = b[1:]
		rs := &DetailReasoning{Tokens: int(int64(u64()))}
		rs.TTFAT = math.Float64frombits(u64())
		rs.AnswerITLs = int(int64(u64()))
		rs.Source = str()
		r.reasoning = rs
	} else {
		b = b[1:]
	}
	if b[0] == 1 {
		b = b[1:]
		r.checks = make(CheckFailures, u32())
		for k := range r.checks {
			r.checks[k] = prober.CheckResult{Check: prober.CheckName(str()), Result: prober.CheckOutcome(str()), Reason: str()}
		}
	}
	return r, nil
}

// fill hands the summary the spool, as its SpooledDetails.
func (sp *detailSpool) fill(s *Summary, start time.Time) {
	s.SpooledDetails = &SpooledDetails{sp: sp, n: len(sp.offsets), start: start}
}

// SpooledDetails are a summary's details kept on disk: the spool, how
// many rows its arrays have and what their times count from.
type SpooledDetails struct {
	sp    *detailSpool
	n     int
	start time.Time
}

// Close releases the file. Safe on nil.
func (d *SpooledDetails) Close() error {
	if d == nil {
		return nil
	}
	return d.sp.close()
}

// detailKeys are the details' keys in the record's order; the first six
// are bench_serving's, server_timings is written only when a request
// stated server timings, request_reasoning only when a request reasoned,
// trace_ids only when a request carried a trace id, check_failures only
// when a request was judged.
var detailKeys = []string{"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
	"scheduled_times", "sent_times", "first_token_times", "end_times", "request_outcomes", "server_timings", "request_reasoning", "trace_ids",
	"check_failures"}

const standardDetailKeys = 6

// write writes the details' arrays, each as `, "key": [...]`, exactly as
// pyfmt.Encoder writes the in-memory Details: one pass over the rows in index
// order fills a temporary file per array, then the arrays are copied out.
func (d *SpooledDetails) write(w io.Writer, o JSONOptions) error {
	sp := d.sp
	if sp.err != nil {
		return sp.err
	}
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("details spool: %w", err)
	}
	keys := detailKeys
	if o.StandardOnly {
		keys = keys[:standardDetailKeys]
	} else {
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
			return (k == "server_timings" && !sp.server) || (k == "request_reasoning" && !sp.reasoning) || (k == "trace_ids" && !sp.trace) ||
				(k == "check_failures" && !sp.checks)
		})
	}
	cols := make([]*detailSpool, len(keys))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.close()
			}
		}
	}()
	for k := range cols {
		c, err := newDetailSpool()
		if err != nil {
			return err
		}
		cols[k] = c
	}
	e := pyfmt.Encoder{Strict: o.Strict}
	for i := range d.n {
		r, err := sp.read(i)
		if err != nil {
			return err
		}
		for k, c := range cols {
			e.Reset()
			if i > 0 {
				e.WriteString(", ")
			}
			switch keys[k] {
			case "input_lens":
				e.Int(r.inputLen)
			case "output_lens":
				e.Int(r.outputLen)
			case "ttfts":
				e.Float(r.ttft)
			case "itls":
				_ = e.Value(r.itls)
			case "generated_texts":
				e.Str(r.text)
			case "errors":
				e.Str(r.err)
			case "scheduled_times":
				e.Float(relTime(r.times[0], d.start))
			case "sent_times":
				e.Float(relTime(r.times[1], d.start))
			case "first_token_times":
				e.Float(relTime(r.times[2], d.start))
			case "end_times":
				e.Float(relTime(r.times[3], d.start))
			case "request_outcomes":
				e.Str(r.outcome)
			case "server_timings":
				_ = e.Value(r.server)
			case "request_reasoning":
				_ = e.Value(r.reasoning)
			case "trace_ids":
				e.Str(r.traceID)
			case "check_failures":
				_ = e.Value(r.checks)
			}
			if _, err := c.w.Write(e.Bytes()); err != nil {
				return fmt.Errorf("details spool: %w", err)
			}
		}
	}
	for k, c := range cols {
		e.Reset()
		e.WriteString(", ")
		e.Str(keys[k])
		e.WriteString(": [")
		if _, err := w.Write(e.Bytes()); err != nil {
			return err
		}
		if err := c.w.Flush(); err != nil {
			return fmt.Errorf("details spool: %w", err)
		}
		if _, err := io.Copy(w, io.NewSectionReader(c.f, 0, math.MaxInt64)); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "]"); err != nil {
			return err
		}
	}
	return nil
}

func (sp *detailSpool) close() error {
	err := sp.f.Close()
	if sp.path != "" {
		err = errors.Join(err, os.Remove(sp.path))
		sp.path = ""
	}
	return err
}
