package simulator

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"golang.org/x/sync/semaphore"

	"github.com/servingprobe/servingprobe/tokenizer"
)

// FaultHeader is the request header that asks for a Fault.
const FaultHeader = "X-Servingprobe-Fault"

// RequestIDHeader keys ground truth; it is echoed in every response.
const RequestIDHeader = "X-Request-Id"

var (
	errTruthDisabled = errors.New("ground truth is disabled (truth size 0)")
	errTruthEvicted  = errors.New("ground truth evicted from the ring")
)

// Server is the simulator. It is safe for concurrent use.
type Server struct {
	cfg     Config
	logger  log.Logger
	sem     *semaphore.Weighted // nil: no cap
	running atomic.Int64
	// waiting counts the requests queued for a running slot; kvUsed the
	// KV tokens (whole blocks) running requests reserve.
	waiting atomic.Int64
	kvUsed  atomic.Int64
	seq     atomic.Uint64
	// metrics, prefix and the scrape log serve GET /metrics.
	metrics    *engineMetrics
	prefix     *prefixCache
	scrapeMu   sync.Mutex
	scrapes    [scrapeLogSize]Scrape
	scrapeNext int
	truth      *truthStore
	replies    *replies // nil unless Config.CheckHistory
	mux        *http.ServeMux
	// profileStarts and profileStops count the /start_profile and
	// /stop_profile calls answered.
	profileStarts, profileStops atomic.Int64
	live                        atomic.Pointer[Live] // nil until SetLive
	created                     int64                // Unix seconds at New, for /v1/models
	// tok counts prompts (see countText). It is the shared embedded
	// tokenizer, loaded once per process, safe for concurrent use.
	tok *tokenizer.Tokenizer
}

// New validates cfg and builds a Server.
func New(cfg Config, logger log.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	// Loaded here rather than at the first request, so that its cost
	// (about 0.2 s of CPU, once per process) is never in a request's time.
	tok, err := tokenizer.Default()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	s := &Server{cfg: cfg, logger: logger, truth: newTruthStore(cfg.TruthSize), created: now.Unix(), tok: tok,
		metrics: newEngineMetrics(cfg.MetricsNames, cfg.Model, now),
		prefix:  newPrefixCache(cfg.MetricsNames.blockSize(), cfg.KVCacheTokens/cfg.MetricsNames.blockSize()),
	}
	if cfg.CheckHistory {
		s.replies = newReplies()
	}
	if cfg.MaxRunningRequests > 0 {
		// semaphore.Weighted serves waiters in FIFO order.
		s.sem = semaphore.NewWeighted(int64(cfg.MaxRunningRequests))
	}
	m := http.NewServeMux()
	m.HandleFunc("POST /generate", s.generation(EndpointGenerate, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseGenerate(b) }))
	m.HandleFunc("POST /v1/completions", s.generation(EndpointCompletions, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseCompletions(b) }))
	m.HandleFunc("POST /v1/chat/completions", s.generation(EndpointChat, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseChat(b) }))
	m.HandleFunc("POST /v2/models/{model}/generate_stream", s.generation(EndpointTRT, func(b []byte, r *http.Request) (genRequest, *apiError) {
		return s.parseTRT(b, r.PathValue("model"), true)
	}))
	m.HandleFunc("POST /v2/models/{model}/generate", s.generation(EndpointTRT, func(b []byte, r *http.Request) (genRequest, *apiError) {
		return s.parseTRT(b, r.PathValue("model"), false)
	}))
	// truss serves /v1/models/{name}:predict; a mux wildcard must be a
	// whole segment, so the suffix is checked by hand.
	m.HandleFunc("POST /v1/models/{name}", s.generation(EndpointTruss, func(b []byte, r *http.Request) (genRequest, *apiError) {
		if !strings.HasSuffix(r.PathValue("name"), ":predict") {
			return genRequest{}, &apiError{status: http.StatusNotFound, message: "Not Found"}
		}
		return s.parseCompletions(b)
	}))
	m.HandleFunc("POST /api/generate", s.generation(EndpointOllama, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseOllama(b, false) }))
	m.HandleFunc("POST /api/chat", s.generation(EndpointOllamaChat, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseOllama(b, true) }))
	m.HandleFunc("POST /v1/responses", s.generation(EndpointResponses, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseResponses(b) }))
	m.HandleFunc("POST /v1/messages", s.generation(EndpointMessages, func(b []byte, _ *http.Request) (genRequest, *apiError) { return s.parseMessages(b) }))
	m.HandleFunc("POST /v1/embeddings", s.embeddings)
	m.HandleFunc("GET /v1/models", s.models)
	m.HandleFunc("POST /tokenize", s.tokenize)
	m.HandleFunc("POST /detokenize", s.detokenize)
	m.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	m.HandleFunc("GET /server_info", s.serverInfo)
	m.HandleFunc("GET /model_info", s.modelInfo)
	m.HandleFunc("GET /get_server_info", s.serverInfo)
	m.HandleFunc("GET /debug/truth/{id}", s.truthHandler)
	m.HandleFunc("GET /metrics", s.metricsHandler)
	m.HandleFunc("POST /reset_prefix_cache", s.flushCache)
	m.HandleFunc("POST /flush_cache", s.flushCache)
	m.HandleFunc("POST /start_profile", s.startProfile)
	m.HandleFunc("POST /stop_profile", s.stopProfile)
	if cfg.Admin {
		m.HandleFunc("GET /admin/live", s.liveHandler)
		m.HandleFunc("PUT /admin/live", s.liveHandler)
	}
	s.mux = m
	return s, nil
}

// Handler serves every simulated endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Truths returns the ground truth of the finished requests still in the
// ring, in the order they finished.
func (s *Server) Truths() []Truth { return s.truth.all() }

// Truth returns the ground truth of a finished request, if still in the ring.
func (s *Server) Truth(id string) (Truth, bool) { return s.truth.get(id) }

// WaitTruth waits until the request with this id has finished and returns
// its ground truth. A client that has read a whole stream should use it
// rather than Truth: the handler may still be returning.
func (s *Server) WaitTruth(ctx context.Context, id string) (Truth, error) {
	return s.truth.wait(ctx, id)
}

// newID derives a 32-hex-digit id from the seed and the request's sequence
// number, as sglang's uuid4().hex looks.
func (s *Server) newID(seq uint64) string {
	const hex = "0123456789abcdef"
	var b [32]byte
	x := s.cfg.Seed ^ seq*0x9e3779b97f4a7c15
	for i := 0; i < 2; i++ {
		v := splitmix64(&x)
		for j := 0; j < 16; j++ {
			b[i*16+j] = hex[v>>60]
			v <<= 4
		}
	}
	return string(b[:])
}

func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// pickFault returns the header's fault if allowed, else a draw from the
// configured rates.
func (s *Server) pickFault(r *http.Request, rng *rand.Rand) (Fault, *apiError) {
	if h := r.Header.Get(FaultHeader); h != "" && s.cfg.HeaderFaults {
		f, err := ParseFault(h)
		if err != nil {
			return FaultNone, badRequest("%s: %v", FaultHeader, err)
		}
		return f, nil
	}
	if s.liveFault(rng) {
		return Fault503, nil
	}
	if len(s.cfg.FaultRates) == 0 {
		return FaultNone, nil
	}
	u := rng.Float64()
	for _, f := range Faults {
		p := s.cfg.FaultRates[f]
		if u < p {
			return f, nil
		}
		u -= p
	}
	return FaultNone, nil
}

type parseFunc func(body []byte, r *http.Request) (genRequest, *apiError)

// generation wraps one protocol's parser into the common request lifecycle.
func (s *Server) generation(ep Endpoint, parse parseFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		conn := requestConn(r)
		read, received := receivedAt(conn)
		seq := s.seq.Add(1)
		id := r.Header.Get(RequestIDHeader)
		if id == "" {
			id = s.newID(seq)
		}
		w.Header().Set(RequestIDHeader, id)
		rec := newRecord(s.metrics, s.truth != nil, id, ep, received, read, arrived)
		defer func() {
			rec.finish = rec.since(time.Now())
			s.observe(rec)
			s.truth.publish(rec)
		}()

		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
		if err != nil {
			s.writeError(w, ep, rec, badRequest("reading the body: %v", err))
			return
		}
		req, apiErr := parse(body, r)
		if apiErr != nil {
			s.writeError(w, ep, rec, apiErr)
			return
		}
		rng := rand.New(rand.NewPCG(s.cfg.Seed, seq))
		fault, apiErr := s.pickFault(r, rng)
		if apiErr != nil {
			s.writeError(w, ep, rec, apiErr)
			return
		}
		if rec != nil {
			rec.fault = fault
			rec.promptTokens = req.promptTokens
		}
		outcome := s.run(r.Context(), w, ep, &req, fault, rng, rec, conn, id, arrived)
		level.Debug(s.logger).Log("msg", "Simulated request", "endpoint", ep, "request_id", id, "fault", fault,
			"prompt_tokens", req.promptTokens, "max_tokens", req.maxTokens, "stream", req.stream,
			"outcome", outcome, "duration_seconds", time.Since(arrived).Seconds())
	}
}

// run serves one admitted-or-queued generation and reports how it ended.
func (s *Server) run(ctx context.Context, w http.ResponseWriter, ep Endpoint, req *genRequest, fault Fault, rng *rand.Rand, rec *record, conn *stampConn, id string, arrived time.Time) string {
	switch fault {
	case Fault401, Fault403, Fault429, Fault500, Fault503:
		status, _ := strconv.Atoi(string(fault))
		if fault == Fault429 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.cfg.RetryAfter.Seconds()))))
		}
		s.writeError(w, ep, rec, &apiError{status: status, message: http.StatusText(status) + " (simulated)"})
		return "fault"
	case FaultStallBeforeHeaders:
		if !s.stall(ctx) {
			return "client_gone"
		}
	case FaultHTML200:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, gatewayErrorPage)
		_ = http.NewResponseController(w).Flush()
		if rec != nil {
			rec.add(ChunkBody, 0, len(gatewayErrorPage))
			rec.flushed(time.Now(), time.Time{})
		}
		return "fault"
	case FaultJSONNotStream:
		req.stream = false
	}

	sw := newStreamWriter(w, s.cfg.Coalesce && req.stream, s.cfg.CoalesceBytes, rec, conn)
	defer sw.release()
	flushHeaders := func() bool {
		if sw.flush() != nil {
			return false
		}
		if rec != nil {
			rec.headers = rec.since(sw.lastFlush)
		}
		return true
	}
	if req.stream {
		w.Header().Set("Content-Type", streamContentType(ep))
		w.WriteHeader(http.StatusOK)
		// Real servers send the headers as soon as the request is queued;
		// in coalesced mode they wait for the first buffer.
		if !sw.coalesce && !flushHeaders() {
			return "client_gone"
		}
	}
	if fault == FaultStallAfterHeaders || (!req.stream && fault == FaultStallMidStream) {
		if !req.stream {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
		}
		if !flushHeaders() || !s.stall(ctx) {
			return "client_gone"
		}
	}

	// Admission: a running slot, FIFO.
	if s.sem != nil {
		s.waiting.Add(1)
		err := s.sem.Acquire(ctx, 1)
		s.waiting.Add(-1)
		if err != nil {
			return "client_gone"
		}
		defer s.sem.Release(1)
	}
	s.running.Add(1)
	defer s.running.Add(-1)
	admitted := time.Now()
	cached := s.prefix.admit(req.promptIDs)
	if rec != nil {
		rec.admitted = rec.since(admitted)
		rec.cachedTokens = cached
	}

	n, eos := s.cfg.outputLen(rng, req.maxTokens, req.minTokens, req.ignoreEOS)
	kv := s.kvBlocks(req.promptTokens + n)
	s.kvUsed.Add(kv)
	defer s.kvUsed.Add(-kv)
	if req.tool != nil && ep == EndpointChat && req.stream {
		// A tool call is as long as its fragments and ends by itself.
		req.tool.plan(id, fault == FaultMalformedToolCall)
		// Cut at max_tokens like any answer, with finish reason length.
		n = min(len(req.tool.frags), max(req.maxTokens, 1))
		eos = n == len(req.tool.frags)
	}
	g := &gen{id: id, model: req.model, created: arrived.Unix(), arrived: arrived, admitted: admitted, promptTokens: req.promptTokens, n: n, eos: eos, rng: rng,
		stateMetrics: s.cfg.StateMetrics}
	if ep == EndpointChat && req.stream {
		g.tool = req.tool
	}
	if s.replies != nil {
		g.text = make([]byte, 0, 8*n)
	}
	var em emitter
	switch ep {
	case EndpointGenerate:
		em = newGenerateEmitter(g)
	case EndpointCompletions, EndpointTruss:
		em = newCompletionsEmitter(g)
	case EndpointChat:
		em = newChatEmitter(g)
	case EndpointTRT:
		em = newTRTEmitter(g.model)
	case EndpointOllama, EndpointOllamaChat:
		em = newOllamaEmitter(g, ep == EndpointOllamaChat)
	case EndpointResponses:
		em = newResponsesEmitter(g)
	case EndpointMessages:
		em = newMessagesEmitter(g)
	}

	var tm *time.Timer
	defer func() {
		if tm != nil {
			tm.Stop()
		}
	}()
	sleepUntil := func(at time.Time) bool {
		d := time.Until(at)
		if d <= 0 {
			return ctx.Err() == nil
		}
		if tm == nil {
			tm = time.NewTimer(d)
		} else {
			tm.Reset(d)
		}
		select {
		case <-tm.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	first := admitted.Add(s.ttftDelay(rng, req.promptTokens))
	g.first = first
	if !sleepUntil(first) {
		return "client_gone"
	}
	if !req.stream {
		return s.unary(w, ep, sw, em, g, fault, first, sleepUntil, rec)
	}
	return s.stream(ctx, w, sw, em, g, fault, first, sleepUntil, req.includeUsage, rec)
}

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, sw *streamWriter, em emitter, g *gen, fault Fault, first time.Time, sleepUntil func(time.Time) bool, includeUsage bool, rec *record) string {
	defer func() {
		if rec != nil {
			rec.outputTokens = g.emitted
		}
	}()
	if em.begin(sw, g) != nil {
		return "client_gone"
	}
	zero := s.cfg.zeroDecode()
	mid := max(1, g.n/2)
	faultDone := false
	next := first
	for {
		k := min(s.cfg.TokensPerChunk, g.n-g.emitted)
		final := g.emitted+k >= g.n
		if em.tokens(sw, g, k, final) != nil {
			return "client_gone"
		}
		g.emitted += k
		if final && !sw.coalesce {
			// The last token chunk is out: the engine has finished the
			// request and counts it before the stream's end reaches the
			// client, so a reader that saw the end finds it counted.
			// Coalesced, the last chunk is still buffered with the end:
			// the handler's return counts it.
			s.observe(rec)
		}
		if !faultDone && g.emitted >= mid {
			faultDone = true
			switch fault {
			case FaultStallMidStream:
				if sw.flush() != nil || !s.stall(ctx) {
					return "client_gone"
				}
			case FaultResetMidStream:
				if sw.flush() != nil {
					return "client_gone"
				}
				reset(w)
				return "fault"
			case FaultMalformedChunk:
				if em.malformed(sw, g) != nil {
					return "client_gone"
				}
			case FaultErrorInStream:
				if em.errorEvent(sw) != nil || sw.flush() != nil {
					return "client_gone"
				}
				return "fault"
			case FaultAbortInStream:
				if final {
					break // nothing left to abort
				}
				switch em.(type) {
				case *trtEmitter, *ollamaEmitter: // no abort finish reason: an error line
					if em.errorEvent(sw) != nil || sw.flush() != nil {
						return "client_gone"
					}
					return "fault"
				}
				g.aborted = true
				if em.tokens(sw, g, 0, true) != nil ||
					(includeUsage && em.usage(sw, g) != nil) || em.done(sw) != nil || sw.flush() != nil {
					return "client_gone"
				}
				return "fault"
			case FaultTruncate:
				if sw.flush() != nil {
					return "client_gone"
				}
				return "fault"
			}
		}
		if final {
			break
		}
		if !zero {
			next = next.Add(s.stepDelay(g.rng, int(s.running.Load())))
			if !sleepUntil(next) {
				return "client_gone"
			}
		}
	}
	// Remembered before the stream ends: the client may send the next
	// round the moment it reads the end.
	s.remember(g)
	if includeUsage && em.usage(sw, g) != nil {
		return "client_gone"
	}
	if fault != FaultNoDone && em.done(sw) != nil {
		return "client_gone"
	}
	if sw.flush() != nil {
		return "client_gone"
	}
	if fault != FaultNone {
		return "fault"
	}
	return "ok"
}

// observe feeds a request's truth to the metrics, once.
func (s *Server) observe(rec *record) {
	if rec == nil || rec.observed {
		return
	}
	rec.observed = true
	s.metrics.observe(rec)
}

// unary serves a non-streaming request: it waits out the whole decode, then
// writes one body.
func (s *Server) unary(w http.ResponseWriter, ep Endpoint, sw *streamWriter, em emitter, g *gen, fault Fault, first time.Time, sleepUntil func(time.Time) bool, rec *record) string {
	text := make([]byte, 0, g.n*7)
	ids := make([]int, 0, g.n)
	next := first
	for g.emitted < g.n {
		k := min(s.cfg.TokensPerChunk, g.n-g.emitted)
		text, ids = drawTokens(g, k, text, ids)
		g.emitted += k
		if g.emitted < g.n && !s.cfg.zeroDecode() {
			next = next.Add(s.stepDelay(g.rng, int(s.running.Load())))
			if !sleepUntil(next) {
				return "client_gone"
			}
		}
	}
	if rec != nil {
		rec.outputTokens = g.emitted
	}
	if fault == FaultErrorInStream {
		s.writeError(w, ep, rec, &apiError{status: http.StatusOK, message: "simulated engine failure"})
		return "fault"
	}
	s.remember(g)
	body := em.body(g, text, ids)
	switch fault {
	case FaultResetMidStream:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = sw.flush()
		reset(w)
		return "fault"
	case FaultMalformedChunk, FaultTruncate, FaultNoDone:
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	sw.buf = append(sw.buf, body...)
	if sw.commit(ChunkBody, g.n) != nil {
		return "client_gone"
	}
	if fault != FaultNone {
		return "fault"
	}
	return "ok"
}

// gatewayErrorPage is FaultHTML200's body: a reverse proxy's error page.
const gatewayErrorPage = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n" +
	"<body><h1>Bad Gateway</h1>\n<p>The upstream server is unavailable.</p></body></html>\n"

// stall holds for FaultStall, or until the client leaves when it is zero.
// It reports whether to carry on.
func (s *Server) stall(ctx context.Context) bool {
	if s.cfg.FaultStall == 0 {
		<-ctx.Done()
		return false
	}
	t := time.NewTimer(s.cfg.FaultStall)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reset aborts the connection with a TCP RST. Over HTTP/2, or when the
// connection cannot be hijacked, it aborts the handler instead, which resets
// the stream or closes the connection.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := unwrapConn(conn).(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func streamContentType(ep Endpoint) string {
	switch ep {
	case EndpointTRT:
		return "text/event-stream"
	case EndpointOllama, EndpointOllamaChat:
		return "application/x-ndjson"
	}
	// Starlette appends the charset to text/ media types.
	return "text/event-stream; charset=utf-8"
}

func contextWithTimeout(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}
