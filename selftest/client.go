package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/prober"
)

// ClientSpec is one client child's scenario.
type ClientSpec struct {
	Scenario     string        `json:"scenario"` // capacity, fidelity, memory, arrival
	BaseURL      string        `json:"base_url"`
	Streams      int           `json:"streams"`
	Duration     time.Duration `json:"duration"`
	OutputTokens int           `json:"output_tokens"`
	Requests     int           `json:"requests"` // fidelity: measured, per stream
	Rate         float64       `json:"rate"`     // arrival
	// Start is the fidelity start mode, StartStaggered (also when empty)
	// or StartBurst; StaggerOver is one request's duration.
	Start       string        `json:"start,omitempty"`
	StaggerOver time.Duration `json:"stagger_over,omitempty"`
	// Clock is what stamps the client's times: prober.ClockKernel (the
	// default, also when empty) or prober.ClockUser.
	Clock prober.Clock `json:"clock,omitempty"`
}

// ClientResult is what a client child reports, one JSON object.
type ClientResult struct {
	Spec ClientSpec `json:"spec"`
	Err  string     `json:"error,omitempty"`

	// capacity
	Wall     time.Duration `json:"wall,omitempty"`
	CPU      time.Duration `json:"cpu,omitempty"`
	Tokens   int64         `json:"tokens,omitempty"`
	Requests int           `json:"requests,omitempty"`
	Failed   int           `json:"failed,omitempty"`

	// fidelity: errors and their parts in nanoseconds (see fidelity.go)
	TTFTErr       Dist `json:"ttft_err"`
	ITLErr        Dist `json:"itl_err"`
	OldTTFTErr    Dist `json:"old_ttft_err"`
	OldITLErr     Dist `json:"old_itl_err"`
	ReqPath       Dist `json:"req_path"`
	Send          Dist `json:"send"`
	ReadLag       Dist `json:"read_lag"`
	HandlerLag    Dist `json:"handler_lag"`
	FirstDelivery Dist `json:"first_delivery"`
	Delivery      Dist `json:"delivery"`
	StampLag      Dist `json:"stamp_lag"`
	NewConns      int  `json:"new_conns,omitempty"`
	// LoadWall is the fidelity load's duration; ClientCPU and ServerCPU
	// are the CPU time each process used during it (ServerCPU 0 when the
	// server did not say), Events the token events the client received.
	LoadWall  time.Duration `json:"load_wall,omitempty"`
	Events    int64         `json:"events,omitempty"`
	ClientCPU time.Duration `json:"client_cpu,omitempty"`
	ServerCPU time.Duration `json:"server_cpu,omitempty"`
	// GCs and GCPauseMax are the client's collections during the load
	// and the longest stop-the-world pause among them.
	GCs        int           `json:"gcs,omitempty"`
	GCPauseMax time.Duration `json:"gc_pause_max,omitempty"`
	Mismatched int           `json:"mismatched,omitempty"`

	// memory
	RSSBefore  int64 `json:"rss_before,omitempty"`
	RSSOpen    int64 `json:"rss_open,omitempty"`
	HeapBefore int64 `json:"heap_before,omitempty"`
	HeapOpen   int64 `json:"heap_open,omitempty"`
	Open       int   `json:"open,omitempty"`

	// arrival
	ScheduledRate float64 `json:"scheduled_rate,omitempty"`
	SentRate      float64 `json:"sent_rate,omitempty"`
	Lag           Dist    `json:"lag"`
	HeapAfterGC   []int64 `json:"heap_after_gc,omitempty"` // after half and all requests
	HeapAt        []int   `json:"heap_at,omitempty"`
}

// Dist is a distribution summary in nanoseconds: V is min, p50, p99, max
// (nearest rank).
type Dist struct {
	N int     `json:"n"`
	V []int64 `json:"v,omitempty"`
}

func dist(v []int64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	slices.Sort(v)
	q := func(p float64) int64 { return v[min(len(v)-1, int(p*float64(len(v)-1)+0.5))] }
	return Dist{N: len(v), V: []int64{v[0], q(0.5), q(0.99), v[len(v)-1]}}
}

func (d Dist) get(i int) int64 {
	if len(d.V) != 4 {
		return 0
	}
	return d.V[i]
}

func newProber(base string, streams int, clock prober.Clock) (*prober.Prober, error) {
	t := &config.Target{Name: "selftest", URL: base, HTTPClientConfig: promconfig.DefaultHTTPClientConfig}
	c, err := prober.NewClient(t, prober.ClientOptions{Concurrency: streams, UserClock: clock == prober.ClockUser})
	if err != nil {
		return nil, err
	}
	be, err := prober.NewBackend("vllm")
	if err != nil {
		return nil, err
	}
	return &prober.Prober{Client: c, Backend: be, Name: "vllm", Target: "selftest",
		Options: prober.RequestOptions{BaseURL: base, Model: simModel, Stream: true, IgnoreEOS: true, IncludeUsage: true}}, nil
}

func prompt(n int) datasets.Prompt { return datasets.Prompt{Text: "hi", PromptLen: 1, OutputLen: n} }

// cpuTime is this process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss is VmRSS from /proc/self/status, in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// RunClient runs one scenario and writes its ClientResult as JSON to out.
//
// With SERVINGPROBE_SELFTEST_CPUPROFILE set, the client writes a CPU
// profile of the scenario to that path (for BENCHMARKS.md's pprof tops).
func RunClient(ctx context.Context, spec ClientSpec, out io.Writer) error {
	raiseNoFile()
	stop, err := cpuProfile("SERVINGPROBE_SELFTEST_CPUPROFILE")
	if err != nil {
		return err
	}
	defer stop()
	var res ClientResult
	switch spec.Scenario {
	case "capacity":
		res, err = capacity(ctx, spec)
	case "fidelity":
		res, err = fidelity(ctx, spec)
	case "memory":
		res, err = memory(ctx, spec)
	case "arrival":
		res, err = arrival(ctx, spec)
	default:
		err = fmt.Errorf("unknown scenario %q", spec.Scenario)
	}
	res.Spec = spec
	if err != nil {
		res.Err = err.Error()
	}
	return json.NewEncoder(out).Encode(res)
}

// warm opens one connection per stream with a one-token request each, so
// that connection setup is not measured.
func warm(ctx context.Context, p *prober.Prober, streams int) {
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Run(ctx, prompt(1), time.Time{})
		}()
	}
	wg.Wait()
}

// capacity streams as fast as the server sends, with streams requests in
// flight, for spec.Duration: tokens per second and CPU per token.
func capacity(ctx context.Context, spec ClientSpec) (ClientResult, error) {
	p, err := newProber(spec.BaseURL, spec.Streams, spec.Clock)
	if err != nil {
		return ClientResult{}, err
	}
	warm(ctx, p, spec.Streams)
	runtime.GC()
	var (
		tokens       atomic.Int64
		reqs, failed atomic.Int64
		wg           sync.WaitGroup
	)
	cpu0, start := cpuTime(), time.Now()
	deadline := start.Add(spec.Duration)
	for range spec.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r := p.Run(ctx, prompt(spec.OutputTokens), time.Time{})
				reqs.Add(1)
				if r.Outcome != prober.OutcomeSuccess {
					failed.Add(1)
					continue
				}
				tokens.Add(int64(r.OutputTokens))
			}
		}()
	}
	wg.Wait()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	return ClientResult{Wall: wall, CPU: cpu, Tokens: tokens.Load(), Requests: int(reqs.Load()), Failed: int(failed.Load())}, nil
}

// countingTransport counts responses whose headers arrived.
type countingTransport struct {
	http.RoundTripper
	n atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.RoundTripper.RoundTrip(r)
	if err == nil {
		c.n.Add(1)
	}
	return resp, err
}

// memory opens spec.Streams streams that the server holds idle (it waits
// its TTFT before the first token) and reports RSS and heap before and
// with all of them open.
func memory(ctx context.Context, spec ClientSpec) (ClientResult, error) {
	p, err := newProber(spec.BaseURL, spec.Streams, spec.Clock)
	if err != nil {
		return ClientResult{}, err
	}
	ct := &countingTransport{RoundTripper: p.Client.Transport}
	p.Client.Transport = ct
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res := ClientResult{RSSBefore: rss(), HeapBefore: int64(ms.HeapInuse + ms.StackInuse)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range spec.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Run(ctx, prompt(4), time.Time{})
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for ct.n.Load() < int64(spec.Streams) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // let every reader block in Read
	res.Open = int(ct.n.Load())
	runtime.GC()
	runtime.ReadMemStats(&ms)
	res.RSSOpen, res.HeapOpen = rss(), int64(ms.HeapInuse+ms.StackInuse)
	cancel()
	wg.Wait()
	return res, nil
}

// arrival sends Poisson arrivals at spec.Rate for spec.Duration through
// prober.Benchmark with DiscardResults into a bench.Accumulator, as the
// bench command does, and compares requested, scheduled and sent rates.
// It also reads the heap after GC half way and at the end: it should not
// grow with the number of requests beyond the accumulator's per-request
// summary.
func arrival(ctx context.Context, spec ClientSpec) (ClientResult, error) {
	n := int(spec.Rate * spec.Duration.Seconds())
	p, err := newProber(spec.BaseURL, 256, spec.Clock)
	if err != nil {
		return ClientResult{}, err
	}
	warm(ctx, p, 64)
	pacer, err := prober.NewPoisson(spec.Rate, 1)
	if err != nil {
		return ClientResult{}, err
	}
	prompts := make([]datasets.Prompt, n)
	for i := range prompts {
		prompts[i] = prompt(spec.OutputTokens)
	}
	acc := bench.NewAccumulator(bench.Params{Backend: "vllm", RequestRate: spec.Rate})
	var (
		sched, sent = make([]time.Time, 0, n), make([]time.Time, 0, n)
		lag         = make([]int64, 0, n)
		failed      int
		res         ClientResult
	)
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	done := 0
	run, err := prober.Benchmark(ctx, prober.BenchmarkConfig{
		Pacer: pacer, Prompts: prompts, Do: p.Run, DiscardResults: true,
		OnResult: func(i int, prompt datasets.Prompt, r prober.Result) {
			acc.Add(i, r, prompt)
			if r.Outcome != prober.OutcomeSuccess {
				failed++
			}
			sched, sent = append(sched, r.Scheduled), append(sent, r.Sent)
			lag = append(lag, int64(r.Sent.Sub(r.Scheduled)))
			done++
			if done == n/2 || done == n {
				res.HeapAfterGC = append(res.HeapAfterGC, heap())
				res.HeapAt = append(res.HeapAt, done)
			}
		},
	})
	if err != nil {
		return res, err
	}
	if _, err := acc.Summary(run.Duration); err != nil {
		return res, err
	}
	span := func(ts []time.Time) float64 {
		lo, hi := slices.MinFunc(ts, time.Time.Compare), slices.MaxFunc(ts, time.Time.Compare)
		return float64(len(ts)-1) / hi.Sub(lo).Seconds()
	}
	res.Requests, res.Failed = len(sent), failed
	if len(sent) > 1 {
		res.ScheduledRate, res.SentRate = span(sched), span(sent)
	}
	res.Lag = dist(lag)
	return res, nil
}

// cpuProfile writes a CPU profile to the path the environment variable
// names, if set, until the returned function is called.
func cpuProfile(env string) (func(), error) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
