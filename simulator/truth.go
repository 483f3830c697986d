package simulator

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Endpoint names the protocol a request used. It is a closed enum.
type Endpoint string

// The endpoints.
const (
	EndpointGenerate    Endpoint = "sglang-generate"
	EndpointCompletions Endpoint = "openai-completions"
	EndpointChat        Endpoint = "openai-chat"
	EndpointTRT         Endpoint = "trt-generate"
	EndpointTruss       Endpoint = "truss-predict"
	EndpointOllama      Endpoint = "ollama-generate"
	EndpointOllamaChat  Endpoint = "ollama-chat"
	EndpointResponses   Endpoint = "openai-responses"
	EndpointMessages    Endpoint = "anthropic-messages"
	EndpointEmbeddings  Endpoint = "openai-embeddings"
)

// ChunkKind says what an event written to a stream carried.
type ChunkKind uint8

// The chunk kinds.
const (
	// ChunkRole is the chat role chunk, with no tokens.
	ChunkRole ChunkKind = iota + 1
	// ChunkToken carries output tokens (the last one also the finish
	// reason).
	ChunkToken
	// ChunkUsage is the usage-only chunk.
	ChunkUsage
	// ChunkDone is "data: [DONE]".
	ChunkDone
	// ChunkError is an error object inside a 200 stream.
	ChunkError
	// ChunkMalformed is the malformed-chunk fault's broken event.
	ChunkMalformed
	// ChunkBody is a whole non-streaming response body.
	ChunkBody
)

var chunkKindNames = [...]string{"", "role", "token", "usage", "done", "error", "malformed", "body"}

func (k ChunkKind) String() string {
	if int(k) < len(chunkKindNames) {
		return chunkKindNames[k]
	}
	return "unknown"
}

// MarshalText writes the kind's name.
func (k ChunkKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Chunk is one write of a stream, as the server saw it.
type Chunk struct {
	// At is when the Write+Flush carrying the chunk returned. In coalesced
	// mode chunks that shared a buffer share its flush time. It carries a
	// monotonic reading, comparable with the client's clock in-process.
	At time.Time
	// Wrote is when the last write system call of that flush began, on a
	// StampListener connection; zero otherwise. The bytes reach the peer
	// within the call, while At may also hold the wait for a CPU after it.
	Wrote  time.Time
	Kind   ChunkKind
	Tokens int
	Bytes  int
}

// Truth is the server-side timeline of one request.
type Truth struct {
	RequestID string
	Endpoint  Endpoint
	Fault     Fault
	// Received is the kernel's receive timestamp of the bytes that
	// completed the request's headers (see StampListener; Linux). It has
	// no monotonic reading. Zero when unknown.
	Received time.Time
	// Read is when the read that returned those bytes returned; zero when
	// the connection was not stamped. Read − Received is the server's wait
	// to read them.
	Read time.Time
	// Arrived is when the handler started; Arrived − Read is the server's
	// parse and scheduling lag. The chunks' offsets in the JSON are from
	// Arrived.
	Arrived time.Time
	// Admitted is when the request got a running slot; zero if never.
	Admitted time.Time
	// HeadersFlushed is when the status and headers were flushed on their
	// own; zero when they went out with the first chunk (coalesced mode,
	// non-streaming responses, errors).
	HeadersFlushed time.Time
	// Finished is when the handler returned.
	Finished     time.Time
	PromptTokens int
	// CachedTokens are the prompt's leading tokens the prefix cache held
	// at admission (see prefixCache); zero if never admitted.
	CachedTokens     int
	CompletionTokens int
	Chunks           []Chunk
}

// Start is the truthful start of the server's TTFT: Received when known,
// else Read, else Arrived. A request that waited to be read, or for its
// handler, was waiting at the server.
func (t *Truth) Start() time.Time {
	switch {
	case !t.Received.IsZero():
		return t.Received
	case !t.Read.IsZero():
		return t.Read
	}
	return t.Arrived
}

// TTFT is the time from Start to the first chunk carrying tokens.
func (t *Truth) TTFT() (time.Duration, bool) {
	for _, c := range t.Chunks {
		if c.Tokens > 0 {
			return c.At.Sub(t.Start()), true
		}
	}
	return 0, false
}

// ITLs are the gaps between consecutive chunks carrying tokens, one per
// chunk, however many tokens it holds.
func (t *Truth) ITLs() []time.Duration {
	var out []time.Duration
	var last time.Time
	for _, c := range t.Chunks {
		if c.Tokens == 0 {
			continue
		}
		if !last.IsZero() {
			out = append(out, c.At.Sub(last))
		}
		last = c.At
	}
	return out
}

type truthJSON struct {
	RequestID        string      `json:"request_id"`
	Endpoint         Endpoint    `json:"endpoint"`
	Fault            Fault       `json:"fault,omitempty"`
	ReceivedUnixNano int64       `json:"received_unix_nano,omitempty"`
	ReadUnixNano     int64       `json:"read_unix_nano,omitempty"`
	ArrivedUnixNano  int64       `json:"arrived_unix_nano"`
	AdmittedUnixNano int64       `json:"admitted_unix_nano,omitempty"`
	HeadersUnixNano  int64       `json:"headers_flushed_unix_nano,omitempty"`
	FinishedUnixNano int64       `json:"finished_unix_nano"`
	PromptTokens     int         `json:"prompt_tokens"`
	CachedTokens     int         `json:"cached_tokens"`
	CompletionTokens int         `json:"completion_tokens"`
	Chunks           []chunkJSON `json:"chunks"`
}

type chunkJSON struct {
	Kind ChunkKind `json:"kind"`
	// OffsetNanos is At minus Arrived on the monotonic clock; UnixNano is
	// arrival wall time plus that offset.
	OffsetNanos int64 `json:"offset_nanos"`
	UnixNano    int64 `json:"unix_nano"`
	// WriteUnixNano is Wrote on the same clock as UnixNano.
	WriteUnixNano int64 `json:"write_unix_nano,omitempty"`
	Tokens        int   `json:"tokens"`
	Bytes         int   `json:"bytes"`
}

// MarshalJSON writes wall-clock Unix nanoseconds derived from the arrival
// time plus monotonic offsets, so that every time in one record is
// consistent even if the wall clock steps.
func (t Truth) MarshalJSON() ([]byte, error) {
	unix := func(at time.Time) int64 {
		if at.IsZero() {
			return 0
		}
		return t.Arrived.UnixNano() + int64(at.Sub(t.Arrived))
	}
	j := truthJSON{
		RequestID: t.RequestID, Endpoint: t.Endpoint, Fault: t.Fault,
		ReceivedUnixNano: unix(t.Received), ReadUnixNano: unix(t.Read),
		ArrivedUnixNano: t.Arrived.UnixNano(), AdmittedUnixNano: unix(t.Admitted),
		HeadersUnixNano: unix(t.HeadersFlushed), FinishedUnixNano: unix(t.Finished),
		PromptTokens: t.PromptTokens, CachedTokens: t.CachedTokens, CompletionTokens: t.CompletionTokens,
		Chunks: make([]chunkJSON, len(t.Chunks)),
	}
	for i, c := range t.Chunks {
		j.Chunks[i] = chunkJSON{Kind: c.Kind, OffsetNanos: int64(c.At.Sub(t.Arrived)), UnixNano: unix(c.At), WriteUnixNano: unix(c.Wrote), Tokens: c.Tokens, Bytes: c.Bytes}
	}
	return json.Marshal(j)
}

// record is the mutable truth of a request in flight. It belongs to its
// handler goroutine until published. A nil *record records nothing.
type record struct {
	id                         string
	endpoint                   Endpoint
	fault                      Fault
	received, read, arrived    time.Time
	admitted, headers, finish  int64 // nanoseconds after arrived; -1 unset
	promptTokens, outputTokens int
	cachedTokens               int
	observed                   bool // fed to the metrics already
	// keep says whether chunks are kept for the truth ring; the stats
	// are summed either way, without an allocation per chunk.
	keep    bool
	chunks  []rawChunk
	pending int // first chunk not yet stamped by a flush
	stats   reqStats
}

// reqStats is what the metrics read of a request's chunks, summed as they
// are flushed: the first and last token chunk's flush and the gaps
// between token chunks, bucketed as the metrics bucket them. Chunks
// flushed together share their flush's time, so all but the first of a
// flush are gaps of zero, as Truth.ITLs has them.
type reqStats struct {
	m                   *engineMetrics
	firstOff, lastOff   int64 // token chunks' flush, after arrived; -1 none
	pendFirst           int   // tokens of the first token chunk since the last flush
	pendChunks, pendTok int   // the token chunks after it, and their tokens
	generated           int
	itl                 []uint64 // per ITL bucket, as engineMetrics.itl
	itlSum              float64
}

// addChunk notes a token chunk of n tokens, committed but not flushed.
func (st *reqStats) addChunk(n int) {
	if n == 0 {
		return
	}
	if st.pendFirst == 0 {
		st.pendFirst = n
		return
	}
	st.pendChunks++
	st.pendTok += n
}

// gap adds one gap between token chunks, the later one of n tokens: one
// observation under vLLM; n in the bucket of d/n under sglang (see
// engineMetrics.observe).
func (st *reqStats) gap(d float64, n int) {
	v, count := d, uint64(1)
	if st.m.names == MetricsSGLang {
		v, count = d/float64(n), uint64(n)
	}
	i, _ := slices.BinarySearch(st.m.itl.bounds, v)
	st.itl[i] += count
	st.itlSum += d
}

// flushed stamps the pending token chunks with the flush at off.
func (st *reqStats) flushed(off int64) {
	if st.pendFirst == 0 {
		return
	}
	st.generated += st.pendFirst + st.pendTok
	if st.firstOff < 0 {
		st.firstOff = off
	} else {
		st.gap(time.Duration(off-st.lastOff).Seconds(), st.pendFirst)
	}
	st.lastOff = off
	if st.pendChunks > 0 {
		if st.m.names == MetricsSGLang {
			st.itl[0] += uint64(st.pendTok) // each a gap of 0 over its tokens
		} else {
			st.itl[0] += uint64(st.pendChunks)
		}
	}
	st.pendFirst, st.pendChunks, st.pendTok = 0, 0, 0
}

type rawChunk struct {
	off    int64 // flush returned, after arrived; -1 not yet
	woff   int64 // write began, after arrived; -1 unknown
	bytes  int32
	tokens int32
	kind   ChunkKind
}

func (r *record) since(now time.Time) int64 { return int64(now.Sub(r.arrived)) }

func (r *record) add(kind ChunkKind, tokens, bytes int) {
	if r == nil {
		return
	}
	r.stats.addChunk(tokens)
	if !r.keep {
		return
	}
	r.chunks = append(r.chunks, rawChunk{off: -1, woff: -1, bytes: int32(bytes), tokens: int32(tokens), kind: kind})
}

// flushed stamps every chunk added since the last flush with the flush's
// return and, if known, the start of its write.
func (r *record) flushed(now, wrote time.Time) {
	if r == nil {
		return
	}
	off, woff := r.since(now), int64(-1)
	r.stats.flushed(off)
	if !wrote.IsZero() {
		woff = r.since(wrote)
	}
	for i := r.pending; i < len(r.chunks); i++ {
		r.chunks[i].off, r.chunks[i].woff = off, woff
	}
	r.pending = len(r.chunks)
}

func (r *record) truth() Truth {
	at := func(off int64) time.Time {
		if off < 0 {
			return time.Time{}
		}
		return r.arrived.Add(time.Duration(off))
	}
	t := Truth{
		RequestID: r.id, Endpoint: r.endpoint, Fault: r.fault,
		Received: r.received, Read: r.read, Arrived: r.arrived, Admitted: at(r.admitted), HeadersFlushed: at(r.headers), Finished: at(r.finish),
		PromptTokens: r.promptTokens, CachedTokens: r.cachedTokens, CompletionTokens: r.outputTokens,
		Chunks: make([]Chunk, 0, len(r.chunks)),
	}
	for _, c := range r.chunks {
		if c.off < 0 {
			continue // buffered but never sent
		}
		t.Chunks = append(t.Chunks, Chunk{At: at(c.off), Wrote: at(c.woff), Kind: c.kind, Tokens: int(c.tokens), Bytes: int(c.bytes)})
	}
	return t
}

// truthStore keeps the last size finished records.
type truthStore struct {
	mu      sync.Mutex
	ring    []*record
	next    int
	byID    map[string]*record
	waiters map[string][]chan struct{}
}

func newTruthStore(size int) *truthStore {
	if size == 0 {
		return nil
	}
	return &truthStore{
		ring:    make([]*record, size),
		byID:    make(map[string]*record, size),
		waiters: map[string][]chan struct{}{},
	}
}

// newRecord starts a request's truth. Every generation request has one,
// because the metrics are fed from its stats; keep says whether its
// chunks are kept for the ring.
func newRecord(m *engineMetrics, keep bool, id string, ep Endpoint, received, read, arrived time.Time) *record {
	return &record{keep: keep, stats: reqStats{m: m, firstOff: -1, lastOff: -1, itl: make([]uint64, len(m.itl.counts))}, id: id, endpoint: ep, received: received, read: read, arrived: arrived, admitted: -1, headers: -1, finish: -1}
}

func (s *truthStore) publish(r *record) {
	if s == nil || r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.ring[s.next]; old != nil && s.byID[old.id] == old {
		delete(s.byID, old.id)
	}
	s.ring[s.next] = r
	s.next = (s.next + 1) % len(s.ring)
	s.byID[r.id] = r
	for _, ch := range s.waiters[r.id] {
		close(ch)
	}
	delete(s.waiters, r.id)
}

// all returns the kept records' truths in the order they were published.
func (s *truthStore) all() []Truth {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Truth
	for i := range s.ring {
		if r := s.ring[(s.next+i)%len(s.ring)]; r != nil {
			out = append(out, r.truth())
		}
	}
	return out
}

func (s *truthStore) get(id string) (Truth, bool) {
	if s == nil {
		return Truth{}, false
	}
	s.mu.Lock()
	r, ok := s.byID[id]
	s.mu.Unlock()
	if !ok {
		return Truth{}, false
	}
	// Published records are immutable, so reading outside the lock is safe.
	return r.truth(), true
}

func (s *truthStore) wait(ctx context.Context, id string) (Truth, error) {
	if s == nil {
		return Truth{}, errTruthDisabled
	}
	s.mu.Lock()
	if r, ok := s.byID[id]; ok {
		s.mu.Unlock()
		return r.truth(), nil
	}
	ch := make(chan struct{})
	s.waiters[id] = append(s.waiters[id], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		if t, ok := s.get(id); ok {
			return t, nil
		}
		return Truth{}, errTruthEvicted
	case <-ctx.Done():
		s.mu.Lock()
		ws := s.waiters[id]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(s.waiters, id)
		} else {
			s.waiters[id] = ws
		}
		s.mu.Unlock()
		return Truth{}, ctx.Err()
	}
}
