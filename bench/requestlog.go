package bench

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// --print-requests prints bench_serving's two lines per request (sglang
// python/sglang/benchmark/serving.py at 00f9ec47,
// async_request_openai_chat_completions):
//
//	rid = str(uuid.uuid4())
//	input_partial = deepcopy(request_func_input)
//	input_partial.prompt = "..."
//	request_start_time = time.time()
//	print(f'rid={rid} time={request_start_time} message="request start" request_func_input="{str(input_partial)}"')
//	...
//	curr_t = time.time()
//	output_partial = deepcopy(output)
//	output_partial.generated_text = "..."
//	print(f'rid={rid} time={curr_t} time_delta={curr_t - request_start_time} message="request end" output="{str(output_partial)}"')
//
// str() of a dataclass is its repr: "Name(field=repr(value), ...)" in
// field order. The fields are those of RequestFuncInput and
// RequestFuncOutput in the same file (see appendInput, appendOutput).
// The lines go to stdout for the warm-up requests as well as the measured
// ones, as bench_serving sends both through the same request function.
//
// bench_serving prints them only from its chat request function and
// refuses the flag for any backend but sglang-oai-chat
// (`assert args.backend == "sglang-oai-chat"  # only support this now`,
// with no message). servingprobe prints the same lines for every backend:
// no script that works with bench_serving can depend on the refusal, and
// the lines have the same shape whatever the backend.

// RequestLogRun holds the parts of RequestFuncInput and RequestFuncOutput
// that are the same for every request of a run. The run engine fills it
// (bench/runner's newRequestLogRun); the lines read only this and each
// request's prompt and Result.
type RequestLogRun struct {
	APIURL, Model string
	// Extra is bench_serving's extra_request_body before a row's own
	// extras are merged in, in its key order (bench/runner's runExtraFields).
	Extra []pyfmt.Field
	// Stream: bench_serving's multi-turn rounds ask for usage in
	// stream_options when streaming.
	Stream bool
	// PerChunk: one ITL per chunk after the first, as the summary counts
	// them (Params: ChunkITL unless the backend splits chunk gaps).
	PerChunk bool
	// TextChunks: the request function fills text_chunks (bench_serving's
	// completions and chat functions; /generate, trt and truss do not).
	TextChunks bool
	// EmptySuccess is the compat empty-success (see RequestSucceeded).
	EmptySuccess bool
	// CacheReport: cached_tokens and cached_tokens_details are read only
	// under --cache-report.
	CacheReport bool
	// SpecAccept: the request function reads spec_accept_length
	// (bench_serving's /generate function from meta_info, its chat one
	// only when not streaming, from choices[0].meta_info).
	SpecAccept bool
	// Origin is where start_time counts from (see appendOutput).
	Origin time.Time
}

// requestEvent is one line of --print-requests, kept as values: the
// formatting and the write happen on the writer goroutine.
type requestEvent struct {
	id     int
	end    bool
	at     time.Time // time.time() at the start, or at the end
	prompt datasets.Prompt
	result prober.Result // the end's
}

// RequestLog writes a line when each request starts and ends, off the
// request path: a request only appends a small value to a queue under a
// mutex (no formatting, no I/O, never waits for the writer), and one
// goroutine formats the queued lines and writes them through a buffer.
// What it costs a request is that append (a copy of its prompt and result
// values, amortised allocation). The rid, a random UUID as uuid.uuid4()
// gives, is drawn on the writer goroutine too. The caller reads the clock
// and hands the times in, so that this package reads none.
//
// The queue is bounded: each queued end holds its request's Result (its
// text and events), and an output nobody reads (a pipe to a stalled
// reader) grew it by megabytes a second, without end. A request that
// starts while the queue holds more than maxQueuedBytes is dropped whole,
// its start and end lines both (so no end line lacks its start), and
// counted (Dropped); a request whose start was queued always queues its
// end. Close waits for the queued lines at most closeWait, so a run ends
// when its load does even if the output never takes them; what was not
// written is counted as dropped too.
type RequestLog struct {
	w   *bufio.Writer
	run RequestLogRun

	mu          sync.Mutex
	queue       []requestEvent
	queuedBytes int // what the queue's events hold, about
	writing     int // lines in the writer's batch, not yet written
	dropped     int // lines dropped, counted in pairs for whole requests
	nextID      int
	wake        chan struct{}
	done        chan struct{}
	closed      bool
	// err is the first write error (the writer goroutine's; read after
	// done is closed): the lines are the output the user asked for, so
	// losing them fails the run rather than passing unseen.
	err error

	// Writer goroutine state: each started request's rid and start time
	// until its end line.
	open map[int]openRequest
}

// maxQueuedBytes bounds what the queue of unwritten lines holds (see
// RequestLog); a line's size is its Result's text and events.
const maxQueuedBytes = 16 << 20

// closeWait is how long Close waits for the writer to take the queued
// lines before it gives up on them.
var closeWait = 2 * time.Second

func eventBytes(e *requestEvent) int {
	return int(unsafe.Sizeof(*e)) + len(e.result.GeneratedText) + cap(e.result.Events)*int(unsafe.Sizeof(prober.Event{}))
}

type openRequest struct {
	rid   [36]byte
	start float64
}

// NewRequestLog starts a log of run's requests that writes to w; Close
// stops it.
func NewRequestLog(w io.Writer, run RequestLogRun) *RequestLog {
	l := &RequestLog{w: bufio.NewWriterSize(w, 64<<10), run: run, wake: make(chan struct{}, 1), done: make(chan struct{}), open: map[int]openRequest{}}
	go l.loop()
	return l
}

func (l *RequestLog) push(e requestEvent) {
	l.mu.Lock()
	l.queue = append(l.queue, e)
	l.queuedBytes += eventBytes(&e)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Started records that a request built from p started at at (time.time()
// when it is sent) and returns its id for Ended: negative when the queue
// is full and the request's lines are dropped.
func (l *RequestLog) Started(at time.Time, p datasets.Prompt) int {
	l.mu.Lock()
	if l.queuedBytes > maxQueuedBytes {
		l.dropped += 2
		l.mu.Unlock()
		return -1
	}
	id := l.nextID
	l.nextID++
	l.mu.Unlock()
	l.push(requestEvent{id: id, at: at, prompt: p})
	return id
}

// Ended records that request id, built from p, finished at at with r.
func (l *RequestLog) Ended(id int, at time.Time, p datasets.Prompt, r *prober.Result) {
	if id < 0 {
		return // its start was dropped, and counted with its end
	}
	l.push(requestEvent{id: id, end: true, at: at, prompt: p, result: *r})
}

// Dropped is the number of lines not written: dropped while the queue was
// full, and left unwritten when Close stopped waiting. Read it after
// Close.
func (l *RequestLog) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

func (l *RequestLog) loop() {
	defer close(l.done)
	var batch []requestEvent
	var line []byte
	for {
		_, ok := <-l.wake
		l.mu.Lock()
		batch, l.queue = l.queue, batch[:0]
		l.queuedBytes, l.writing = 0, len(batch)
		closed := l.closed
		l.mu.Unlock()
		for i := range batch {
			if l.err != nil {
				// Nothing more can be written: drop the rest unformatted.
				batch[i] = requestEvent{}
				continue
			}
			line = l.appendLine(line[:0], &batch[i])
			// bufio.Writer's errors are sticky: after the first, every
			// write and flush returns it and writes nothing.
			if _, err := l.w.Write(line); err != nil {
				l.err = err
			}
			batch[i] = requestEvent{} // drop the result's events and text
			l.mu.Lock()
			l.writing--
			l.mu.Unlock()
		}
		if err := l.w.Flush(); err != nil && l.err == nil {
			l.err = err
		}
		if closed || !ok {
			return
		}
	}
}

// Close writes every queued line, stops the writer and returns the first
// write error, if any. If the output takes no line for closeWait, Close
// returns without the rest and counts them in Dropped; the writer
// goroutine ends when its write does.
func (l *RequestLog) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	l.mu.Lock()
	left := len(l.queue) + l.writing
	l.mu.Unlock()
	t := time.NewTimer(closeWait)
	defer t.Stop()
wait:
	for {
		select {
		case <-l.done:
			break wait
		case <-t.C:
			l.mu.Lock()
			n := len(l.queue) + l.writing
			if n != left {
				// Still writing, if slowly: wait on.
				left = n
				l.mu.Unlock()
				t.Reset(closeWait)
				continue
			}
			l.dropped += n
			l.mu.Unlock()
			return nil
		}
	}
	if l.err != nil {
		return fmt.Errorf("--print-requests: %w", l.err)
	}
	return nil
}

// unixSeconds is time.time() at t: the Unix time in seconds as a float,
// as CPython divides its nanoseconds.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// appendLine formats one event's line (on the writer goroutine).
func (l *RequestLog) appendLine(b []byte, e *requestEvent) []byte {
	at := unixSeconds(e.at)
	if !e.end {
		o := openRequest{start: at}
		newUUID4(&o.rid)
		l.open[e.id] = o
		return AppendRequestStart(b, o.rid[:], at, &l.run, &e.prompt)
	}
	o := l.open[e.id]
	delete(l.open, e.id)
	return AppendRequestEnd(b, o.rid[:], at, at-o.start, &l.run, &e.prompt, &e.result)
}

// AppendRequestStart appends the "request start" line of a request built
// from p, with its rid and time.time() at its start.
func AppendRequestStart(b, rid []byte, at float64, run *RequestLogRun, p *datasets.Prompt) []byte {
	b = append(b, "rid="...)
	b = append(b, rid...)
	b = append(b, " time="...)
	b = pyfmt.AppendFloat(b, at)
	b = append(b, ` message="request start" request_func_input="`...)
	b = appendInput(b, run, p)
	return append(b, "\"\n"...)
}

// AppendRequestEnd appends the "request end" line of a request built from
// p that ended with r, with its rid, time.time() at its end and the
// seconds since its start.
func AppendRequestEnd(b, rid []byte, at, delta float64, run *RequestLogRun, p *datasets.Prompt, r *prober.Result) []byte {
	b = append(b, "rid="...)
	b = append(b, rid...)
	b = append(b, " time="...)
	b = pyfmt.AppendFloat(b, at)
	b = append(b, " time_delta="...)
	b = pyfmt.AppendFloat(b, delta)
	b = append(b, ` message="request end" output="`...)
	b = appendOutput(b, run, p, r)
	b = append(b, '"')
	if r.TraceID != "" {
		// Ours, after bench_serving's fields, so that a script reading
		// them finds them where they always were: the request's trace
		// in the server's tracing backend.
		b = append(b, " trace_id="...)
		b = append(b, r.TraceID...)
	}
	return append(b, '\n')
}

// appendInput is str(input_partial): the RequestFuncInput with its prompt
// replaced by "...".
//
//	@dataclass
//	class RequestFuncInput:
//	    prompt: Union[str, List[str], List[Dict[str, str]]]
//	    api_url: str
//	    prompt_len: int
//	    output_len: int
//	    model: str
//	    lora_name: str
//	    image_data: Optional[List[str]]
//	    extra_request_body: Dict[str, Any]
//	    timestamp: Optional[float] = None
//	    routing_key: Optional[str] = None
//
// lora_name is None without --lora-name; image_data None for a row with no
// images; extra_request_body is the run's merged with the row's own
// ({**extra_request_body, **request.extra_request_body}, the row's keys
// sorted), plus stream_options.include_usage on a multi-turn round when
// streaming (wrap_multi_turn_request_func); timestamp is the row's trace
// offset in milliseconds where it has one.
func appendInput(b []byte, run *RequestLogRun, p *datasets.Prompt) []byte {
	b = append(b, "RequestFuncInput(prompt='...', api_url="...)
	b = pyfmt.AppendStr(b, run.APIURL)
	b = append(b, ", prompt_len="...)
	b = strconv.AppendInt(b, int64(p.PromptLen), 10)
	b = append(b, ", output_len="...)
	b = strconv.AppendInt(b, int64(p.OutputLen), 10)
	b = append(b, ", model="...)
	b = pyfmt.AppendStr(b, run.Model)
	b = append(b, ", lora_name="...)
	b = pyfmt.AppendOptStr(b, p.LoRA)
	b = append(b, ", image_data="...)
	if p.LazyImages != nil {
		// The images the request sends: made again from the prompt's
		// seed, the same bytes.
		if q, err := p.WithImages(); err == nil {
			p = &q
		}
	}
	if p.Images == nil {
		b = append(b, "None"...)
	} else {
		b = pyfmt.AppendRepr(b, p.Images)
	}
	b = append(b, ", extra_request_body="...)
	b = pyfmt.AppendDict(b, requestExtraFields(run, p))
	b = append(b, ", timestamp="...)
	b = pyfmt.AppendOptFloat(b, float64(p.Timestamp)/float64(time.Millisecond), p.Timestamp != 0)
	b = append(b, ", routing_key="...)
	b = pyfmt.AppendOptStr(b, p.RoutingKey)
	return append(b, ')')
}

// requestExtraFields is a request's extra_request_body.
func requestExtraFields(run *RequestLogRun, p *datasets.Prompt) []pyfmt.Field {
	if len(p.ExtraBody) == 0 && !(p.MultiTurn && run.Stream) {
		return run.Extra
	}
	fields := slices.Clone(run.Extra)
	for _, f := range pyfmt.SortedFields(p.ExtraBody) {
		fields = pyfmt.SetField(fields, f.Key, f.Value)
	}
	if p.MultiTurn && run.Stream {
		// options = body.get("stream_options") or {};
		// options.setdefault("include_usage", True)
		var opts []pyfmt.Field
		for _, f := range fields {
			if m, ok := f.Value.(map[string]any); ok && f.Key == "stream_options" && len(m) > 0 {
				opts = pyfmt.SortedFields(m)
			}
		}
		found := false
		for _, o := range opts {
			found = found || o.Key == "include_usage"
		}
		if !found {
			opts = append(opts, pyfmt.Field{Key: "include_usage", Value: true})
		}
		fields = pyfmt.SetField(fields, "stream_options", opts)
	}
	return fields
}

// appendOutput is str(output_partial): the RequestFuncOutput with its
// generated_text replaced by "...".
//
//	@dataclass
//	class RequestFuncOutput:
//	    generated_text: str = ""
//	    success: bool = False
//	    latency: float = 0.0
//	    ttft: float = 0.0  # Time to first token
//	    tpot: Optional[float] = None  # Time per output token
//	    itl: List[float] = field(default_factory=list)
//	    text_chunks: List[str] = field(default_factory=list)
//	    prompt_len: int = 0
//	    error: str = ""
//	    output_len: int = 0
//	    start_time: float = 0.0
//	    cached_tokens: int = 0
//	    cached_tokens_details: Optional[Dict[str, Any]] = None
//	    spec_accept_length: float = 0.0
//	    spec_cap_length: float = 0.0
//	    spec_block_accept_length: float = 0.0
//	    spec_cap_lens_histogram: List[int] = field(default_factory=list)
//
// The values are the ones the summary takes from the request (bench's
// samples), as bench_serving's request function sets them: latency and
// output_len only on success, ttft from the first token even on a
// failure, tpot never (None). start_time is bench_serving's
// time.perf_counter() at the send, a clock whose origin Python leaves
// undefined; here it is the seconds since run.Origin (the engine's: when
// the process started).
// spec_accept_length is the server's where bench_serving reads it (see
// RequestLogRun.SpecAccept), else 0.0.
// cached_tokens_details is rebuilt from the counts read (device and host,
// storage and storage_backend where set), not the server's object as
// sent. spec_cap_length, spec_block_accept_length and
// spec_cap_lens_histogram are not read and stay at their defaults.
func appendOutput(b []byte, run *RequestLogRun, p *datasets.Prompt, r *prober.Result) []byte {
	sm := ResultSamples(r)
	ok := RequestSucceeded(r, run.EmptySuccess)
	b = append(b, "RequestFuncOutput(generated_text='...', success="...)
	if ok {
		b = append(b, "True, latency="...)
		b = pyfmt.AppendFloat(b, max(sm.E2E, 0).Seconds())
	} else {
		b = append(b, "False, latency=0.0"...)
	}
	b = append(b, ", ttft="...)
	ttft := 0.0
	if prober.Defined(sm.TTFT) {
		ttft = sm.TTFT.Seconds()
	}
	b = pyfmt.AppendFloat(b, ttft)
	b = append(b, ", tpot=None, itl="...)
	b = pyfmt.AppendRepr(b, r.AppendITLs([]float64{}, run.PerChunk))
	b = append(b, ", text_chunks=["...)
	if run.TextChunks {
		for i := 1; i < len(r.Events); i++ {
			lo, hi := r.Events[i-1].TextEnd, r.Events[i].TextEnd
			if i > 1 {
				b = append(b, ", "...)
			}
			if lo < 0 || hi < lo || hi > len(r.GeneratedText) {
				lo, hi = 0, 0
			}
			b = pyfmt.AppendStr(b, r.GeneratedText[lo:hi])
		}
	}
	b = append(b, "], prompt_len="...)
	b = strconv.AppendInt(b, int64(RequestInputTokens(&sm, *p)), 10)
	b = append(b, ", error="...)
	b = pyfmt.AppendStr(b, r.Err)
	b = append(b, ", output_len="...)
	outLen := 0
	if ok {
		outLen = sm.OutputTokens
	}
	b = strconv.AppendInt(b, int64(outLen), 10)
	b = append(b, ", start_time="...)
	start := 0.0
	if !r.Sent.IsZero() {
		start = r.Sent.Sub(run.Origin).Seconds()
	}
	b = pyfmt.AppendFloat(b, start)
	b = append(b, ", cached_tokens="...)
	cached := 0
	var details []pyfmt.Field
	if run.CacheReport {
		cached = r.CachedTokens
		if d := r.CacheDetails; d != nil {
			details = []pyfmt.Field{{Key: "device", Value: d.Device}, {Key: "host", Value: d.Host}}
			if d.Storage != 0 || d.StorageBackend != "" {
				details = append(details, pyfmt.Field{Key: "storage", Value: d.Storage})
			}
			if d.StorageBackend != "" {
				details = append(details, pyfmt.Field{Key: "storage_backend", Value: d.StorageBackend})
			}
		}
	}
	b = strconv.AppendInt(b, int64(cached), 10)
	b = append(b, ", cached_tokens_details="...)
	if details == nil {
		b = append(b, "None"...)
	} else {
		b = pyfmt.AppendDict(b, details)
	}
	b = append(b, ", spec_accept_length="...)
	spec := 0.0
	if run.SpecAccept {
		spec = r.SpecAcceptLength
	}
	b = pyfmt.AppendFloat(b, spec)
	return append(b, ", spec_cap_length=0.0, spec_block_accept_length=0.0, spec_cap_lens_histogram=[])"...)
}

// newUUID4 writes a random (version 4) UUID in its canonical form, as
// str(uuid.uuid4()).
func newUUID4(dst *[36]byte) {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
}
