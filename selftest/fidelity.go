package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// The fidelity start modes.
const (
	// StartStaggered spreads the streams' starts over one request's
	// duration, as a steady load arrives; it is the default.
	StartStaggered = "staggered"
	// StartBurst starts every stream at the same instant (a thundering
	// herd: N requests reach the server together and its N timers then
	// fire together every ITL).
	StartBurst = "burst"
)

// truthJSON is the part of the simulator's /debug/truth/{id} we read. Times
// within one record come from the simulator's monotonic clock (but
// received, the kernel's); the Unix nanoseconds put them on the wall clock
// that the client shares with it.
type truthJSON struct {
	ReceivedUnixNano int64 `json:"received_unix_nano"` // kernel receipt; 0 unknown
	ReadUnixNano     int64 `json:"read_unix_nano"`     // 0: connection not stamped
	ArrivedUnixNano  int64 `json:"arrived_unix_nano"`  // handler start
	Chunks           []struct {
		OffsetNanos   int64 `json:"offset_nanos"`    // flush returned, from arrived
		UnixNano      int64 `json:"unix_nano"`       // flush returned
		WriteUnixNano int64 `json:"write_unix_nano"` // write call began; 0 unknown
		Tokens        int   `json:"tokens"`
	} `json:"chunks"`
}

// sample is one request's client timings set against its truth, in
// nanoseconds. The truth of a chunk is when the simulator's write of it
// began (else when its flush returned), and the server's TTFT starts when
// the request reached the server (the kernel's receipt, else the read, else
// the handler start). Then, on the wall clock:
//
//	ttftErr = reqPath + delivery[0]
//	itlErr[i] = delivery[i+1] − delivery[i]
//
// (the client's side of each error uses its monotonic clock, so a
// wall-clock step would break the identity, not the error).
type sample struct {
	ttftErr int64
	itlErr  []int64
	// oldTTFTErr and oldITLErr are the errors against the truth before
	// stamped connections: TTFT from the handler start, chunks at their
	// flush's return.
	oldTTFTErr int64
	oldITLErr  []int64
	// reqPath is the server's receipt of the request minus the client's
	// Sent: the client's send and the kernel's, with the kernel stamp.
	reqPath int64
	// send is WroteRequest − Sent, the client's part of reqPath; hasSend
	// is false when the trace has no WroteRequest.
	send    int64
	hasSend bool
	// readLag is the server's read of the request minus the kernel's
	// receipt; handlerLag its handler start minus the read. Both are the
	// server's own, outside the error; hasReadLag and hasHandlerLag say
	// whether the stamps were there.
	readLag, handlerLag       int64
	hasReadLag, hasHandlerLag bool
	// delivery is each token event's client stamp minus the server's
	// write of its chunk: the client's receive lag.
	delivery []int64
	// stampLag is, per token chunk, the flush's return minus the write's
	// start: how late the old truth stamped the chunk (nil unknown).
	stampLag []int64
	newConn  bool
}

// compare sets r against its truth t. It reports false when the truth's
// token chunks do not pair one to one with r's events.
func compare(r *prober.Result, t *truthJSON) (sample, bool) {
	var off, wall, write []int64
	for _, c := range t.Chunks {
		if c.Tokens > 0 {
			off, wall, write = append(off, c.OffsetNanos), append(wall, c.UnixNano), append(write, c.WriteUnixNano)
		}
	}
	ev := r.Events
	if len(off) == 0 || len(off) != len(ev) || r.FirstToken.IsZero() {
		return sample{}, false
	}
	start := t.ArrivedUnixNano
	s := sample{newConn: !r.Trace.ConnReused}
	if t.ReadUnixNano != 0 {
		start = t.ReadUnixNano
		s.handlerLag, s.hasHandlerLag = t.ArrivedUnixNano-t.ReadUnixNano, true
		if t.ReceivedUnixNano != 0 {
			start = t.ReceivedUnixNano
			s.readLag, s.hasReadLag = t.ReadUnixNano-t.ReceivedUnixNano, true
		}
	}
	stamped := true
	for i := range write {
		if write[i] == 0 {
			stamped = false
			write[i] = wall[i]
		}
	}
	ttft := int64(r.FirstToken.Sub(r.Sent))
	s.ttftErr = ttft - (write[0] - start)
	s.oldTTFTErr = ttft - off[0]
	s.reqPath = start - r.Sent.UnixNano()
	if !r.Trace.WroteRequest.IsZero() {
		s.send, s.hasSend = int64(r.Trace.WroteRequest.Sub(r.Sent)), true
	}
	s.delivery = make([]int64, len(ev))
	s.itlErr, s.oldITLErr = make([]int64, 0, len(ev)-1), make([]int64, 0, len(ev)-1)
	if stamped {
		s.stampLag = make([]int64, len(ev))
	}
	for i := range ev {
		s.delivery[i] = ev[i].At.UnixNano() - write[i]
		if stamped {
			s.stampLag[i] = wall[i] - write[i]
		}
		if i > 0 {
			gap := int64(ev[i].At.Sub(ev[i-1].At))
			s.itlErr = append(s.itlErr, gap-(write[i]-write[i-1]))
			s.oldITLErr = append(s.oldITLErr, gap-(off[i]-off[i-1]))
		}
	}
	return s, true
}

// staggerOffsets spreads n stream starts over d: stream i starts at a
// seeded uniform draw from its slot [i·d/n, (i+1)·d/n). Evenly spaced starts
// would put the streams on a few phases of the server's ITL period, so
// their chunk writes would still coincide; the draw spreads them over all.
func staggerOffsets(n int, d time.Duration, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]time.Duration, n)
	for i := range out {
		lo, hi := int64(d)*int64(i)/int64(n), int64(d)*int64(i+1)/int64(n)
		out[i] = time.Duration(lo)
		if hi > lo {
			out[i] += time.Duration(r.Int64N(hi - lo))
		}
	}
	return out
}

// measuredRequests is how many measured requests each of n streams runs:
// at least atLeast, and enough for minSamples TTFT samples per point, but
// no more than fit in budget one request duration d after another.
func measuredRequests(atLeast, minSamples, n int, d, budget time.Duration) int {
	r := max(atLeast, (minSamples+n-1)/n)
	if d > 0 {
		r = min(r, max(atLeast, int(budget/d)))
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// tailRequests bounds the unmeasured requests a staggered stream sends
// after its measured ones while others are still measuring. Unbounded, a
// saturated simulator's slow stragglers kept the others sending until the
// truth ring had evicted every measured request; bounded, the ring size is
// known (warm-up, lead-in, measured and tail requests per stream).
const tailRequests = 2

// fidelityTruthSize is the simulator's truth ring for n streams of reqs
// measured requests: every stream's warm-up, lead-in, measured and tail
// requests, with one to spare, so that none is evicted before it is read.
func fidelityTruthSize(n, reqs int) int { return n * (1 + 1 + reqs + tailRequests + 1) }

// fidelityLoadLimit bounds a fidelity point's load; requests still running
// then are canceled and count as failed.
const fidelityLoadLimit = 4 * time.Minute

// fidelity runs spec.Requests measured requests on each of spec.Streams
// streams, then fetches the server's ground truth of each and compares
// (see sample).
//
// Staggered (the default), stream i starts at staggerOffsets' point of one
// request duration, runs one unmeasured lead-in request, then its measured
// ones, then up to tailRequests unmeasured requests while other streams
// are still measuring: the measured requests run with all streams in
// flight, and the server's N timers are spread over its ITL period. Burst, every
// stream starts at once and runs only measured requests.
func fidelity(ctx context.Context, spec ClientSpec) (ClientResult, error) {
	p, err := newProber(spec.BaseURL, spec.Streams, spec.Clock)
	if err != nil {
		return ClientResult{}, err
	}
	warm(ctx, p, spec.Streams)
	staggered := spec.Start != StartBurst
	var offsets []time.Duration
	if staggered {
		offsets = staggerOffsets(spec.Streams, spec.StaggerOver, 1)
	}
	id := func(i int) string { return "st-" + strconv.Itoa(i) }
	recs := make([]prober.Result, spec.Streams*spec.Requests)
	var (
		wg        sync.WaitGroup
		measuring atomic.Int64
		events    atomic.Int64 // token events received during the load
	)
	measuring.Store(int64(spec.Streams))
	srv0, _ := serverCPU(ctx, p.Client, spec.BaseURL)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, start := cpuTime(), time.Now()
	// A simulator far past its capacity (or a starved machine) can make
	// requests take minutes: end the load in time to report what finished
	// rather than be killed by the parent (client's 5-minute limit).
	loadCtx, cancel := context.WithTimeout(ctx, fidelityLoadLimit)
	defer cancel()
	for s := range spec.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unmeasured := func() {
				r := p.Run(loadCtx, prompt(spec.OutputTokens), time.Time{})
				events.Add(int64(len(r.Events)))
			}
			if staggered {
				sleepCtx(loadCtx, time.Until(start.Add(offsets[s])))
				unmeasured()
			}
			for k := range spec.Requests {
				i := s*spec.Requests + k
				pp := *p
				pp.Options.Headers = map[string]string{"X-Request-Id": id(i)}
				recs[i] = pp.Run(loadCtx, prompt(spec.OutputTokens), time.Time{})
				events.Add(int64(len(recs[i].Events)))
			}
			if staggered {
				measuring.Add(-1)
				for range tailRequests {
					if measuring.Load() == 0 || loadCtx.Err() != nil {
						break
					}
					unmeasured()
				}
			}
		}()
	}
	wg.Wait()
	res := ClientResult{LoadWall: time.Since(start), ClientCPU: cpuTime() - cpu0, Events: events.Load()}
	runtime.ReadMemStats(&ms1)
	res.GCs, res.GCPauseMax = gcPauses(&ms0, &ms1)
	if srv1, err := serverCPU(ctx, p.Client, spec.BaseURL); err == nil && srv0 > 0 {
		res.ServerCPU = srv1 - srv0
	}

	// Fetch the truth after the load, so that fetching does not perturb it.
	var (
		mu sync.Mutex
		a  struct {
			ttft, itl, oldTTFT, oldITL, path, send, readLag, handlerLag, first, delivery, stampLag []int64
		}
		newConns, mismatched, failed int
		sem                          = make(chan struct{}, 8)
	)
	for i := range recs {
		r := &recs[i]
		if r.Outcome != prober.OutcomeSuccess {
			failed++
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t, err := fetchTruth(ctx, p.Client, spec.BaseURL, id(i))
			s, ok := compare(r, &t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !ok {
				mismatched++
				return
			}
			a.ttft, a.itl = append(a.ttft, s.ttftErr), append(a.itl, s.itlErr...)
			a.oldTTFT, a.oldITL = append(a.oldTTFT, s.oldTTFTErr), append(a.oldITL, s.oldITLErr...)
			a.path = append(a.path, s.reqPath)
			if s.hasSend {
				a.send = append(a.send, s.send)
			}
			if s.hasReadLag {
				a.readLag = append(a.readLag, s.readLag)
			}
			if s.hasHandlerLag {
				a.handlerLag = append(a.handlerLag, s.handlerLag)
			}
			a.first, a.delivery = append(a.first, s.delivery[0]), append(a.delivery, s.delivery...)
			a.stampLag = append(a.stampLag, s.stampLag...)
			if s.newConn {
				newConns++
			}
		}()
	}
	wg.Wait()
	res.Requests, res.Failed, res.Mismatched, res.NewConns = len(recs), failed, mismatched, newConns
	res.TTFTErr, res.ITLErr, res.OldTTFTErr, res.OldITLErr = dist(a.ttft), dist(a.itl), dist(a.oldTTFT), dist(a.oldITL)
	res.ReqPath, res.Send, res.ReadLag, res.HandlerLag = dist(a.path), dist(a.send), dist(a.readLag), dist(a.handlerLag)
	res.FirstDelivery, res.Delivery, res.StampLag = dist(a.first), dist(a.delivery), dist(a.stampLag)
	return res, nil
}

// gcPauses counts the collections between two MemStats and finds their
// longest stop-the-world pause (of the last 256, all MemStats keeps).
func gcPauses(before, after *runtime.MemStats) (n int, longest time.Duration) {
	n = int(after.NumGC - before.NumGC)
	for i := range min(n, len(after.PauseNs)) {
		k := (int(after.NumGC) - 1 - i + len(after.PauseNs)) % len(after.PauseNs)
		longest = max(longest, time.Duration(after.PauseNs[k]))
	}
	return n, longest
}

// serverCPU asks the selftest simulator child for its CPU time.
func serverCPU(ctx context.Context, c *http.Client, base string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/selftest/cpu", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("server cpu: %s", resp.Status)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return time.Duration(n), err
}

func fetchTruth(ctx context.Context, c *http.Client, base, id string) (truthJSON, error) {
	var t truthJSON
	// Every request has ended, so its handler is returning: wait briefly
	// for its record, not for one evicted from the ring.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/truth/"+id+"?wait=1s", nil)
	if err != nil {
		return t, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("truth %s: %s", id, resp.Status)
	}
	return t, json.NewDecoder(resp.Body).Decode(&t)
}
