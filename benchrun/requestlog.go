package benchrun

import (
	"bufio"
	"context"
	"crypto/rand"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/servingprobe/servingprobe/bench"
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

// requestLogRun holds the parts of RequestFuncInput and RequestFuncOutput
// that are the same for every request of a run.
type requestLogRun struct {
	apiURL, model string
	// extra is bench_serving's extra_request_body before a row's own
	// extras are merged in (see runExtraFields).
	extra []pyfmt.Field
	// stream: bench_serving's multi-turn rounds ask for usage in
	// stream_options when streaming.
	stream bool
	// perChunk: one ITL per chunk after the first, as the summary counts
	// them (bench.Params: ChunkITL unless the backend splits chunk gaps).
	perChunk bool
	// textChunks: the request function fills text_chunks (bench_serving's
	// completions and chat functions; /generate, trt and truss do not).
	textChunks bool
	// emptySuccess is bench's compat empty-success (see
	// bench.RequestSucceeded).
	emptySuccess bool
	// cacheReport: cached_tokens and cached_tokens_details are read only
	// under --cache-report.
	cacheReport bool
	// specAccept: the request function reads spec_accept_length
	// (bench_serving's /generate function from meta_info, its chat one
	// only when not streaming, from choices[0].meta_info).
	specAccept bool
	// origin is where start_time counts from (see appendOutput).
	origin time.Time
}

// newRequestLogRun describes run p for its request log.
func newRequestLogRun(p *Prepared) requestLogRun {
	s := p.Spec
	params := s.Params()
	return requestLogRun{
		apiURL: s.BaseURL + p.Info.Path, model: p.Model,
		extra:        runExtraFields(s, p.Info),
		stream:       !s.DisableStream,
		perChunk:     !params.PerTokenITL(),
		textChunks:   p.Info.TextChunks,
		emptySuccess: params.Compat.EmptySuccess,
		cacheReport:  s.CacheReport,
		specAccept:   p.Info.ReadsSpecAccept(!s.DisableStream),
		origin:       processStart,
	}
}

// runExtraFields is bench_serving's extra_request_body as run_benchmark
// builds it: the user's --extra-request-body, then
// return_cached_tokens_details for --cache-report on sglang-oai and
// sglang-oai-chat, then the --fake-prefill fields. A key already present
// keeps its place, as a Python dict does. The user's keys come sorted: a
// Go map does not keep the order of the JSON they came in.
func runExtraFields(s Spec, info prober.BackendInfo) []pyfmt.Field {
	fields := pyfmt.SortedFields(s.ExtraBody)
	if s.CacheReport && info.CacheReportDetails {
		// bench_serving's --cache-report asks sglang's OpenAI routes for
		// the cache tiers' split (sglext.cached_tokens_details). It sets
		// the key in the parsed --extra-request-body, so it wins over the
		// user's value, as the fake-prefill fields do.
		fields = setPyField(fields, "return_cached_tokens_details", true)
	}
	for _, f := range fakePrefillFields(s) {
		fields = setPyField(fields, f.Key, f.Value)
	}
	return fields
}

// setPyField is d[key] = value on a Python dict.
func setPyField(fields []pyfmt.Field, key string, value any) []pyfmt.Field {
	for i := range fields {
		if fields[i].Key == key {
			fields[i].Value = value
			return fields
		}
	}
	return append(fields, pyfmt.Field{Key: key, Value: value})
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

// requestLog writes a line when each request starts and ends, off the
// request path: a request only appends a small value to a queue under a
// mutex (no formatting, no I/O, never waits for the writer), and one
// goroutine formats the queued lines and writes them through a buffer.
// What it costs a request is that append (a copy of its prompt and result
// values, amortised allocation); the queue is unbounded, so a slow
// terminal delays the lines, never the requests, and every line is
// written by close. The rid, a random UUID as uuid.uuid4() gives, is
// drawn on the writer goroutine too.
type requestLog struct {
	w   *bufio.Writer
	run requestLogRun

	mu     sync.Mutex
	queue  []requestEvent
	nextID int
	wake   chan struct{}
	done   chan struct{}
	closed bool

	// Writer goroutine state: each started request's rid and start time
	// until its end line.
	open map[int]openRequest
}

type openRequest struct {
	rid   [36]byte
	start float64
}

func newRequestLog(w io.Writer, run requestLogRun) *requestLog {
	l := &requestLog{w: bufio.NewWriterSize(w, 64<<10), run: run, wake: make(chan struct{}, 1), done: make(chan struct{}), open: map[int]openRequest{}}
	go l.loop()
	return l
}

func (l *requestLog) push(e requestEvent) {
	l.mu.Lock()
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// started records a request's start and returns its id.
func (l *requestLog) started(p datasets.Prompt) int {
	now := time.Now()
	l.mu.Lock()
	id := l.nextID
	l.nextID++
	l.mu.Unlock()
	l.push(requestEvent{id: id, at: now, prompt: p})
	return id
}

// ended records how request id, built from p, finished.
func (l *requestLog) ended(id int, p datasets.Prompt, r *prober.Result) {
	l.push(requestEvent{id: id, end: true, at: time.Now(), prompt: p, result: *r})
}

// wrap is do with a start line before and an end line after each request.
func (l *requestLog) wrap(do func(context.Context, datasets.Prompt, time.Time) prober.Result) func(context.Context, datasets.Prompt, time.Time) prober.Result {
	return func(ctx context.Context, prompt datasets.Prompt, scheduled time.Time) prober.Result {
		id := l.started(prompt)
		r := do(ctx, prompt, scheduled)
		l.ended(id, prompt, &r)
		return r
	}
}

func (l *requestLog) loop() {
	defer close(l.done)
	var batch []requestEvent
	var line []byte
	for {
		_, ok := <-l.wake
		l.mu.Lock()
		batch, l.queue = l.queue, batch[:0]
		closed := l.closed
		l.mu.Unlock()
		for i := range batch {
			line = l.appendLine(line[:0], &batch[i])
			_, _ = l.w.Write(line)
			batch[i] = requestEvent{} // drop the result's events and text
		}
		_ = l.w.Flush()
		if closed || !ok {
			return
		}
	}
}

// close writes every queued line and stops the writer.
func (l *requestLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}

// unixSeconds is time.time() at t: the Unix time in seconds as a float,
// as CPython divides its nanoseconds.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// appendLine formats one event's line (on the writer goroutine).
func (l *requestLog) appendLine(b []byte, e *requestEvent) []byte {
	at := unixSeconds(e.at)
	if !e.end {
		o := openRequest{start: at}
		newUUID4(&o.rid)
		l.open[e.id] = o
		return appendStartLine(b, o.rid[:], at, &l.run, &e.prompt)
	}
	o := l.open[e.id]
	delete(l.open, e.id)
	return appendEndLine(b, o.rid[:], at, at-o.start, &l.run, &e.prompt, &e.result)
}

// appendStartLine is the "request start" line.
func appendStartLine(b, rid []byte, at float64, run *requestLogRun, p *datasets.Prompt) []byte {
	b = append(b, "rid="...)
	b = append(b, rid...)
	b = append(b, " time="...)
	b = pyfmt.AppendFloat(b, at)
	b = append(b, ` message="request start" request_func_input="`...)
	b = appendInput(b, run, p)
	return append(b, "\"\n"...)
}

// appendEndLine is the "request end" line.
func appendEndLine(b, rid []byte, at, delta float64, run *requestLogRun, p *datasets.Prompt, r *prober.Result) []byte {
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
func appendInput(b []byte, run *requestLogRun, p *datasets.Prompt) []byte {
	b = append(b, "RequestFuncInput(prompt='...', api_url="...)
	b = pyfmt.AppendStr(b, run.apiURL)
	b = append(b, ", prompt_len="...)
	b = strconv.AppendInt(b, int64(p.PromptLen), 10)
	b = append(b, ", output_len="...)
	b = strconv.AppendInt(b, int64(p.OutputLen), 10)
	b = append(b, ", model="...)
	b = pyfmt.AppendStr(b, run.model)
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
func requestExtraFields(run *requestLogRun, p *datasets.Prompt) []pyfmt.Field {
	if len(p.ExtraBody) == 0 && !(p.MultiTurn && run.stream) {
		return run.extra
	}
	fields := slices.Clone(run.extra)
	for _, f := range pyfmt.SortedFields(p.ExtraBody) {
		fields = setPyField(fields, f.Key, f.Value)
	}
	if p.MultiTurn && run.stream {
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
		fields = setPyField(fields, "stream_options", opts)
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
// undefined; here it is the seconds since this process started.
// spec_accept_length is the server's where bench_serving reads it (see
// requestLogRun.specAccept), else 0.0.
// cached_tokens_details is rebuilt from the counts read (device and host,
// storage and storage_backend where set), not the server's object as
// sent. spec_cap_length, spec_block_accept_length and
// spec_cap_lens_histogram are not read and stay at their defaults.
func appendOutput(b []byte, run *requestLogRun, p *datasets.Prompt, r *prober.Result) []byte {
	sm := bench.ResultSamples(r)
	ok := bench.RequestSucceeded(r, run.emptySuccess)
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
	b = pyfmt.AppendRepr(b, r.AppendITLs([]float64{}, run.perChunk))
	b = append(b, ", text_chunks=["...)
	if run.textChunks {
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
	b = strconv.AppendInt(b, int64(bench.RequestInputTokens(&sm, *p)), 10)
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
		start = r.Sent.Sub(run.origin).Seconds()
	}
	b = pyfmt.AppendFloat(b, start)
	b = append(b, ", cached_tokens="...)
	cached := 0
	var details []pyfmt.Field
	if run.cacheReport {
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
	if run.specAccept {
		spec = r.SpecAcceptLength
	}
	b = pyfmt.AppendFloat(b, spec)
	return append(b, ", spec_cap_length=0.0, spec_block_accept_length=0.0, spec_cap_lens_histogram=[])"...)
}

// processStart is the origin of start_time (see appendOutput).
var processStart = time.Now()

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
