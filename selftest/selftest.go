// Package selftest measures servingprobe's own client against the built-in
// simulator on one machine: capacity (tokens/s and CPU per token),
// timing fidelity against the simulator's ground truth, memory per open
// stream, and arrival-rate accuracy.
//
// The harness runs every measurement in child processes of the same
// binary: a simulator child pinned to one core and a client child pinned to
// the other (taskset -c 1 and -c 0), so that the client's getrusage is its
// own and its RSS starts clean. The parent only starts children and prints
// the table. Nothing here asserts on time: it reports.
package selftest

import (
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/prober"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Options choose what to run.
type Options struct {
	// Exe is the servingprobe binary re-executed as children.
	Exe string
	// Pin runs the client child under taskset -c 0 and the simulator
	// under taskset -c 1, when taskset exists and there are 2 cores.
	Pin bool
	// Nice is the niceness the children run at (nice -n), 0 to leave it:
	// on a shared machine a negative value keeps other processes' load
	// from delaying the client's reads (it needs root or CAP_SYS_NICE;
	// without, nice warns and runs at the inherited niceness).
	Nice int

	Sections []string // capacity, fidelity, memory, arrival

	CapacityStreams  []int
	CapacityDuration time.Duration
	CapacityTokens   int // output tokens per request

	FidelityStreams []int
	// FidelityRequests is the least number of measured requests per
	// stream, after one warm-up request; it is raised to reach
	// FidelityMinSamples TTFT samples per point, within fidelityBudget.
	FidelityRequests   int
	FidelityMinSamples int
	FidelityTokens     int
	FidelityTTFT       time.Duration
	FidelityITL        time.Duration
	// FidelityStart is StartStaggered (steady arrivals) or StartBurst
	// (every stream at once).
	FidelityStart string
	// FidelityClocks are the client clocks each fidelity point is run with,
	// side by side: kernel receive times and the process's clock.
	FidelityClocks []prober.Clock
	// FidelityLoaded runs a busy loop on the client's core, at its
	// niceness, during every fidelity point: the client shares its core,
	// as on a busy machine, and the kernel's stamps must still hold.
	FidelityLoaded bool

	MemoryStreams []int

	ArrivalRates    []float64
	ArrivalDuration time.Duration
	ArrivalTokens   int

	TokenCountRequests, TokenCountTokens int
	TokenCountGap                        time.Duration

	// E2EPoints are runs of the real bench command; E2ETokens their
	// output tokens per request.
	E2EPoints []E2EPoint
	E2ETokens int
	// E2ELatency are runs of the bench command against a timed simulator
	// that flushes every token, for TTFT as a user reads it: exact
	// random-ids prompts against bench_serving's (--compat
	// random-lengths), with the client's core quiet and loaded.
	E2ELatency []E2EPoint
}

// Full is the complete benchmark (a few minutes).
func Full() Options {
	return Options{
		Pin:                true,
		Nice:               -10,
		Sections:           []string{"capacity", "fidelity", "memory", "arrival", "token-count", "e2e"},
		CapacityStreams:    []int{1, 64, 512, 2048, 8192},
		CapacityDuration:   5 * time.Second,
		CapacityTokens:     512,
		FidelityStreams:    []int{10, 100, 1000, 4000},
		FidelityClocks:     []prober.Clock{prober.ClockKernel, prober.ClockUser},
		FidelityRequests:   2,
		FidelityMinSamples: 200,
		FidelityTokens:     50,
		FidelityTTFT:       100 * time.Millisecond,
		FidelityITL:        10 * time.Millisecond,
		FidelityStart:      StartStaggered,
		MemoryStreams:      []int{1000, 4000},
		ArrivalRates:       []float64{100, 1000, 5000},
		ArrivalDuration:    5 * time.Second,
		ArrivalTokens:      4,
		TokenCountRequests: 10,
		TokenCountTokens:   64,
		TokenCountGap:      10 * time.Millisecond,
		E2EPoints: []E2EPoint{
			{Requests: 10000, Streams: 64, Stats: "exact"}, {Requests: 100000, Streams: 64, Stats: "exact"},
			{Requests: 10000, Streams: 64, Stats: "sketch"}, {Requests: 100000, Streams: 64, Stats: "sketch"},
			{Requests: 10000, Streams: 512, Stats: "exact"},
			{Requests: 10000, Streams: 64, Stats: "exact", InputLen: 1024, StartOnly: true},
			{Requests: 1000000, Streams: 64, Stats: "exact", StartOnly: true},
			{Requests: 1000000, Streams: 64, Stats: "exact", Dataset: "random-ids", StartOnly: true},
			{Requests: 10000, Streams: 64, Stats: "exact", Dataset: "random-ids"},
			{Requests: 10000, Streams: 64, Stats: "exact", Dataset: "random-ids", Compat: "random-lengths"},
		},
		E2ETokens:  256,
		E2ELatency: latencyPoints([]int{10, 100}, 20, 64, 100*time.Millisecond, 10*time.Millisecond),
	}
}

// latencyPoints are, for each stream count, random-ids runs of rounds
// requests a stream (outputLen tokens each, against a simulator of the
// given TTFT and ITL) after a warm-up request a stream: exact prompts then
// bench_serving's, with the
// client's core loaded, then the same with it quiet, each pair back to
// back so that they meet the same machine.
func latencyPoints(streams []int, rounds, outputLen int, ttft, itl time.Duration) []E2EPoint {
	var pts []E2EPoint
	for _, loaded := range []bool{true, false} {
		for _, n := range streams {
			for _, compat := range []string{"", "random-lengths"} {
				pts = append(pts, E2EPoint{Requests: n * rounds, Streams: n, Stats: "exact", Dataset: "random-ids", Compat: compat,
					TTFT: ttft, ITL: itl, OutputLen: outputLen, Loaded: loaded, Warmup: n})
			}
		}
	}
	return pts
}

// fidelityPoint is one fidelity run: its streams and the client's clock.
type fidelityPoint struct {
	streams int
	clock   prober.Clock
}

// fidelityPoints runs each stream count with every clock in turn, so that
// the two clocks of a point are measured minutes apart at most.
func fidelityPoints(o Options) []fidelityPoint {
	clocks := o.FidelityClocks
	if len(clocks) == 0 {
		clocks = []prober.Clock{prober.ClockKernel}
	}
	var pts []fidelityPoint
	for _, n := range o.FidelityStreams {
		for _, c := range clocks {
			pts = append(pts, fidelityPoint{n, c})
		}
	}
	return pts
}

// fidelityBudget bounds the measured requests of one fidelity point, so
// that raising the sample count at few streams keeps the section short.
const fidelityBudget = 15 * time.Second

// requestDuration is one fidelity request from the server's side: its TTFT
// and the decode steps after the first token.
func (o Options) requestDuration() time.Duration {
	return o.FidelityTTFT + time.Duration(max(o.FidelityTokens-1, 0))*o.FidelityITL
}

// Quick proves the harness works in well under a minute; its figures are
// not the benchmark.
func Quick() Options {
	o := Full()
	o.CapacityStreams, o.CapacityDuration = []int{1, 64}, 500*time.Millisecond
	o.FidelityStreams, o.FidelityRequests, o.FidelityMinSamples = []int{10}, 1, 0
	o.MemoryStreams = []int{100}
	o.ArrivalRates, o.ArrivalDuration = []float64{100, 1000}, time.Second
	o.TokenCountRequests, o.TokenCountTokens = 2, 48
	o.E2EPoints, o.E2ETokens = []E2EPoint{{Requests: 500, Streams: 64, Stats: "exact"}, {Requests: 500, Streams: 64, Stats: "sketch"}}, 64
	o.E2ELatency = latencyPoints([]int{10}, 2, 16, 20*time.Millisecond, 2*time.Millisecond)[:2]
	return o
}

// raiseNoFile raises RLIMIT_NOFILE's soft limit to the hard limit: 8,192
// streams need more than the usual 1,024 descriptors. (Go does this at
// start-up since 1.19; doing it here keeps the requirement visible.)
func raiseNoFile() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

type harness struct {
	o      Options
	log    io.Writer
	pinned bool
	niced  bool
}

func (h *harness) command(ctx context.Context, core string, args ...string) *exec.Cmd {
	argv := append([]string{h.o.Exe}, args...)
	if h.pinned {
		argv = append([]string{"taskset", "-c", core}, argv...)
	}
	if h.o.Nice != 0 && h.niced {
		argv = append([]string{"nice", "-n", strconv.Itoa(h.o.Nice)}, argv...)
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// server starts a simulator child and returns its base URL and a stop
// function.
func (h *harness) server(ctx context.Context, spec ServerSpec) (string, func(), error) {
	b, _ := json.Marshal(spec)
	cmd := h.command(ctx, "1", "selftest", "--role=server", "--spec="+string(b))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = h.log
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		stop()
		return "", nil, fmt.Errorf("simulator child did not start: %q %v", line, err)
	}
	return "http://" + addr, stop, nil
}

// client runs one client child and returns its result.
func (h *harness) client(ctx context.Context, spec ClientSpec) (ClientResult, error) {
	b, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := h.command(ctx, "0", "selftest", "--role=client", "--spec="+string(b))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, h.log
	if err := cmd.Run(); err != nil {
		return ClientResult{}, fmt.Errorf("client child: %w", err)
	}
	var r ClientResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return r, fmt.Errorf("client child output %q: %w", out.String(), err)
	}
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

// scenario starts a simulator, runs a client against it, stops the
// simulator.
func (h *harness) scenario(ctx context.Context, s ServerSpec, c ClientSpec) (ClientResult, error) {
	base, stop, err := h.server(ctx, s)
	if err != nil {
		return ClientResult{}, err
	}
	defer stop()
	c.BaseURL = base
	return h.client(ctx, c)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func us(ns int64) string  { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }
func ms(ns int64) string  { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }
func kib(b int64) string  { return strconv.FormatFloat(float64(b)/1024, 'f', 1, 64) }
func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func pct(part, whole time.Duration) string {
	if part <= 0 || whole <= 0 {
		return "-"
	}
	return strconv.FormatFloat(100*part.Seconds()/whole.Seconds(), 'f', 0, 64)
}

// perEvent is cpu per event in microseconds.
func perEvent(cpu time.Duration, events int64) string {
	if cpu <= 0 || events <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(cpu.Microseconds())/float64(events), 'f', 1, 64)
}

// spread is p50/p99/max in milliseconds.
func spread(d Dist) string {
	if d.N == 0 {
		return "-"
	}
	return ms(d.get(1)) + "/" + ms(d.get(2)) + "/" + ms(d.get(3))
}

// Run runs the selected sections and prints the table to out. Child
// processes' stderr goes to log.
func Run(ctx context.Context, o Options, out, log io.Writer) error {
	raiseNoFile()
	h := &harness{o: o, log: log}
	if _, err := exec.LookPath("taskset"); o.Pin && err == nil && runtime.NumCPU() >= 2 {
		h.pinned = true
	}
	if _, err := exec.LookPath("nice"); o.Nice != 0 && err == nil {
		h.niced = true
	}
	pin := "client: taskset -c 0, simulator: taskset -c 1"
	if !h.pinned {
		pin = "NOT pinned (no taskset, fewer than 2 CPUs, or --no-pin)"
	}
	if h.niced {
		pin += fmt.Sprintf("; children at nice %d (a nice warning above means it was not allowed)", o.Nice)
	}
	fmt.Fprintf(out, "servingprobe selftest  %s  %s, %d CPUs, %s, loadavg %s\n%s\n\n",
		time.Now().UTC().Format(time.RFC3339), cpuModel(), runtime.NumCPU(), runtime.Version(), loadavg(), pin)
	var errs []error
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	flush := func() { tw.Flush(); fmt.Fprintln(out) }

	if has(o.Sections, "capacity") {
		fmt.Fprintf(out, "capacity: 0 ms server ITL, %d output tokens per request, %s per point (openai-completions, stream, include_usage)\n",
			o.CapacityTokens, o.CapacityDuration)
		fmt.Fprintln(tw, "mode\tstreams\ttokens/s (wall)\tclient CPU %\tclient CPU µs/token\ttokens per client CPU-s\trequests\tfailed\t")
		for _, coalesce := range []bool{true, false} {
			mode := "per-token"
			if coalesce {
				mode = "coalesced"
			}
			for _, n := range o.CapacityStreams {
				r, err := h.scenario(ctx, ServerSpec{Coalesce: coalesce},
					ClientSpec{Scenario: "capacity", Streams: n, Duration: o.CapacityDuration, OutputTokens: o.CapacityTokens})
				if err != nil {
					errs = append(errs, fmt.Errorf("capacity %s %d: %w", mode, n, err))
					fmt.Fprintf(tw, "%s\t%d\terror: %v\t\t\t\t\t\t\n", mode, n, err)
					continue
				}
				tok := float64(r.Tokens)
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.2f\t%s\t%d\t%d\t\n", mode, n, f0(tok/r.Wall.Seconds()),
					100*r.CPU.Seconds()/r.Wall.Seconds(), r.CPU.Seconds()*1e6/tok, f0(tok/r.CPU.Seconds()), r.Requests, r.Failed)
			}
		}
		flush()
	}

	if has(o.Sections, "fidelity") {
		start := "staggered (stream i starts at a seeded uniform point of its 1/N slot of one request duration, " + o.requestDuration().String() +
			", runs one unmeasured lead-in request before its measured ones and up to " + strconv.Itoa(tailRequests) + " unmeasured ones after, while other streams are measuring)"
		if o.FidelityStart == StartBurst {
			start = "burst (every stream starts at the same instant; no lead-in)"
		}
		fmt.Fprintf(out, "fidelity: server TTFT %s, ITL %s, per-token flush, %d tokens, start %s;\n"+
			"  measured requests per stream: at least %d and enough for %d TTFT samples per point (at most %s of requests);\n"+
			"  error = client-measured minus the simulator's truth (ms): its TTFT from the kernel's receipt of the request, each chunk when the\n"+
			"  write call carrying it began. old: against the truth before stamped connections (TTFT from the handler start, chunks when the\n"+
			"  flush returned). clock: kernel = the client stamps each read with the kernel's receive time of its bytes and starts a request\n"+
			"  on a reused connection when the kernel transmitted its first write; user = the process's clock when the read returned, and the\n"+
			"  call (--compat user-clock)\n",
			o.FidelityTTFT, o.FidelityITL, o.FidelityTokens, start, o.FidelityRequests, o.FidelityMinSamples, fidelityBudget)
		if o.FidelityLoaded {
			fmt.Fprintln(out, "  client core loaded: a busy loop pinned to the client's core at its niceness runs through every point")
		}
		fmt.Fprintln(tw, "streams\tclock\tTTFT p50\tTTFT p99\tTTFT max\tITL p50\tITL p99\tITL max\tITL samples\trequests\tfailed\tunmatched\told TTFT p99\told ITL p99\t")
		var parts []string
		for _, pt := range fidelityPoints(o) {
			n, clk := pt.streams, pt.clock
			reqs := measuredRequests(o.FidelityRequests, o.FidelityMinSamples, n, o.requestDuration(), fidelityBudget)
			stopLoad := func() {}
			if o.FidelityLoaded {
				var err error
				if stopLoad, err = h.busyLoop(ctx, "0"); err != nil {
					errs = append(errs, fmt.Errorf("fidelity %d %s: %w", n, clk, err))
					continue
				}
			}
			r, err := h.scenario(ctx, ServerSpec{TTFT: o.FidelityTTFT, ITL: o.FidelityITL, TruthSize: fidelityTruthSize(n, reqs)},
				ClientSpec{Scenario: "fidelity", Streams: n, Requests: reqs, OutputTokens: o.FidelityTokens,
					Start: o.FidelityStart, StaggerOver: o.requestDuration(), Clock: clk})
			stopLoad()
			if err != nil {
				errs = append(errs, fmt.Errorf("fidelity %d %s: %w", n, clk, err))
				fmt.Fprintf(tw, "%d\t%s\terror: %v\t\t\t\t\t\t\t\t\t\t\t\t\n", n, clk, err)
				parts = append(parts, fmt.Sprintf("%d\t%s\terror\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", n, clk))
				continue
			}
			t, i := r.TTFTErr, r.ITLErr
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", n, clk, ms(t.get(1)), ms(t.get(2)), ms(t.get(3)),
				ms(i.get(1)), ms(i.get(2)), ms(i.get(3)), i.N, r.Requests, r.Failed, r.Mismatched, ms(r.OldTTFTErr.get(2)), ms(r.OldITLErr.get(2)))
			parts = append(parts, fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t\n", n, clk,
				spread(r.ReqPath), spread(r.Send), spread(r.ReadLag), spread(r.HandlerLag), spread(r.FirstDelivery),
				ms(r.Delivery.get(0))+"/"+spread(r.Delivery), spread(r.StampLag), r.NewConns,
				pct(r.ClientCPU, r.LoadWall), pct(r.ServerCPU, r.LoadWall), perEvent(r.ClientCPU, r.Events), perEvent(r.ServerCPU, r.Events),
				r.GCs, ms(int64(r.GCPauseMax))))
		}
		flush()
		fmt.Fprintln(out, "fidelity decomposition (ms, p50/p99/max, on the wall clock both processes share):\n"+
			"  request path = the kernel's receipt of the request at the simulator - client Sent; client send = WroteRequest - Sent, its\n"+
			"    client part. TTFT error = request path + 1st delivery.\n"+
			"  delivery = client stamp of a token event - the start of the simulator's write of its chunk (min/p50/p99/max over every\n"+
			"    token chunk): the client's receive lag. ITL error = difference of consecutive deliveries.\n"+
			"  The simulator's own lags, outside the error: sim read lag = its read of the request - the kernel's receipt; sim handler\n"+
			"    lag = its handler start - its read; sim stamp lag = its flush's return - its write's start (per token chunk).\n"+
			"  new conns: measured requests that did not reuse a warm connection. CPU %: each process's CPU time over the load, from the\n"+
			"    first stream's start to the last request's end (a pinned process near 100 % is saturated; its lags are queueing);\n"+
			"    µs/event: that CPU time per token event the client received in the load (each a write and a read at this ITL).\n"+
			"  client GCs and the longest GC stop-the-world pause (ms) during the load.")
		fmt.Fprintln(tw, "streams\tclock\trequest path\tclient send\tsim read lag\tsim handler lag\t1st delivery\tdelivery\tsim stamp lag\tnew conns\tclient CPU %\tsim CPU %\tclient µs/event\tsim µs/event\tclient GCs\tGC pause max\t")
		for _, line := range parts {
			fmt.Fprint(tw, line)
		}
		flush()
	}

	if has(o.Sections, "memory") {
		fmt.Fprintln(out, "memory: idle open streams (headers received, server holds the first token for 60 s); per stream = (with streams open - before) / streams")
		fmt.Fprintln(tw, "streams\topen\tRSS before KiB\tRSS open KiB\tRSS KiB/stream\tGo heap+stack KiB/stream\t")
		for _, n := range o.MemoryStreams {
			r, err := h.scenario(ctx, ServerSpec{TTFT: time.Minute},
				ClientSpec{Scenario: "memory", Streams: n, OutputTokens: 4})
			if err != nil {
				errs = append(errs, fmt.Errorf("memory %d: %w", n, err))
				fmt.Fprintf(tw, "%d\terror: %v\t\t\t\t\t\n", n, err)
				continue
			}
			open := max(r.Open, 1)
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\n", n, r.Open, kib(r.RSSBefore), kib(r.RSSOpen),
				kib((r.RSSOpen-r.RSSBefore)/int64(open)), kib((r.HeapOpen-r.HeapBefore)/int64(open)))
		}
		flush()
	}

	if has(o.Sections, "arrival") {
		fmt.Fprintf(out, "arrival: Poisson (seed 1) for %s, %d output tokens, coalesced 0 ms server, prober.Benchmark + bench.Accumulator with DiscardResults\n",
			o.ArrivalDuration, o.ArrivalTokens)
		fmt.Fprintln(tw, "requested req/s\tscheduled req/s\tsent req/s\tsent/scheduled\tlag p50 µs\tlag p99 µs\tlag max µs\trequests\tfailed\theap after GC KiB (half, all)\t")
		for _, rate := range o.ArrivalRates {
			r, err := h.scenario(ctx, ServerSpec{Coalesce: true},
				ClientSpec{Scenario: "arrival", Rate: rate, Duration: o.ArrivalDuration, OutputTokens: o.ArrivalTokens})
			if err != nil {
				errs = append(errs, fmt.Errorf("arrival %v: %w", rate, err))
				fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\t\t\t\t\t\n", f0(rate), err)
				continue
			}
			heap := make([]string, len(r.HeapAfterGC))
			for i, v := range r.HeapAfterGC {
				heap[i] = kib(v)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.4f\t%s\t%s\t%s\t%d\t%d\t%s\t\n", f0(rate), r.ScheduledRate, r.SentRate,
				r.SentRate/r.ScheduledRate, us(r.Lag.get(1)), us(r.Lag.get(2)), us(r.Lag.get(3)), r.Requests, r.Failed, strings.Join(heap, ", "))
		}
		flush()
	}
	if has(o.Sections, "token-count") {
		fmt.Fprintf(out, "token-count: one token per chunk every %s, chunk text \"tok \" (2 ids alone to Qwen3), %d tokens x %d requests,\n"+
			"  client with a Qwen3 counter as the bench; per-token ITL median against the server's median gap between chunk writes\n",
			o.TokenCountGap, o.TokenCountTokens, o.TokenCountRequests)
		fmt.Fprintln(tw, "server usage\tserver ITL ms\tclient ITL p50 ms\terror %\told rule ms\tsamples\tevent tokens\toutput tokens\t")
		res, err := runTokenCount(ctx, o.TokenCountRequests, o.TokenCountTokens, o.TokenCountGap)
		if err != nil {
			errs = append(errs, fmt.Errorf("token-count: %w", err))
			fmt.Fprintf(tw, "error: %v\t\t\t\t\t\t\t\t\n", err)
		}
		for _, r := range res {
			fmt.Fprintf(tw, "%v\t%s\t%s\t%.2f\t%s\t%d\t%s\t%s\t\n", r.Usage, ms(int64(r.ServerITL)), ms(int64(r.ClientITL)),
				100*r.Err(), ms(int64(r.OldRuleITL)), r.Samples, r.EventTokensSource, r.OutputTokensSource)
			if e := r.Err(); e > tokenCountTolerance || e < -tokenCountTolerance {
				errs = append(errs, fmt.Errorf("token-count (usage %v): median ITL %s, server %s: off by %.1f%%, more than %.0f%%",
					r.Usage, r.ClientITL, r.ServerITL, 100*e, 100*tokenCountTolerance))
			}
		}
		flush()
	}
	if has(o.Sections, "e2e") {
		fmt.Fprintf(out, "e2e: the real bench command (random dataset unless said, %d output tokens, every request at once under the cap,\n"+
			"  no warm-up), pinned like the client, against a coalescing 0 ms simulator; whole-process getrusage of the bench child.\n"+
			"  first request: from the child's start to its \"Benchmark started\" line, less bench_serving's fixed %v pause: resolving\n"+
			"  the server and tokenizer and preparing the prompts (the first of them when they are made on demand). Start-only points\n"+
			"  stop after 1 s of requests. RSS growth: per request added since the point above with the same streams and stats\n",
			o.E2ETokens, runner.WarmupPause)
		fmt.Fprintln(tw, "dataset\tprompt tokens\trequests\tstreams\tstats\toutput tokens\twall s\tfirst request s\tCPU s\tCPU µs/token\tpeak RSS MiB\tRSS growth B/request\t")
		prev := map[string]E2EResult{}
		prevReq := map[string]int{}
		for _, p := range o.E2EPoints {
			r, err := h.e2e(ctx, p, o.E2ETokens)
			if err != nil {
				errs = append(errs, fmt.Errorf("e2e %s %d×%d %s: %w", p.label(), p.Requests, p.Streams, p.Stats, err))
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\terror: %v\t\t\t\t\t\t\t\n", p.label(), p.inputLen(), p.Requests, p.Streams, p.Stats, err)
				continue
			}
			growth, perTok := "-", "-"
			if !p.StartOnly {
				key := fmt.Sprintf("%s/%d/%d/%s", p.label(), p.inputLen(), p.Streams, p.Stats)
				if q, ok := prev[key]; ok && p.Requests > prevReq[key] {
					growth = f0(float64(r.MaxRSS-q.MaxRSS) / float64(p.Requests-prevReq[key]))
				}
				prev[key], prevReq[key] = r, p.Requests
				if r.OutputTokens > 0 {
					perTok = strconv.FormatFloat(r.CPU.Seconds()*1e6/float64(r.OutputTokens), 'f', 2, 64)
				}
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%.2f\t%.2f\t%.2f\t%s\t%.1f\t%s\t\n", p.label(), p.inputLen(), p.Requests, p.Streams, p.Stats, r.OutputTokens,
				r.Wall.Seconds(), r.FirstRequest.Seconds(), r.CPU.Seconds(), perTok, float64(r.MaxRSS)/(1<<20), growth)
		}
		flush()
		if len(o.E2ELatency) > 0 {
			errs = append(errs, h.e2eLatency(ctx, out, tw, flush, o.E2ELatency, o.E2ETokens)...)
		}
	}
	fmt.Fprintf(out, "loadavg at end: %s\n", loadavg())
	return errors.Join(errs...)
}
