package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/selftest"
)

// addSelftestCommand registers "selftest": servingprobe's own benchmark of
// its client (capacity, timing fidelity against the simulator's ground
// truth, memory per stream, arrival accuracy). The hidden --role and --spec
// flags run the child processes it starts.
func addSelftestCommand(app *kingpin.Application) func(context.Context, *cliEnv) error {
	cmd := app.Command("selftest", "Benchmark servingprobe's own client against the built-in simulator on this machine (client and simulator pinned to separate cores) and print a table. See BENCHMARKS.md.")
	full := selftest.Full()
	quick := cmd.Flag("quick", "Run a small subset with short durations (well under a minute), to prove the harness works; not a measurement.").Bool()
	sections := cmd.Flag("sections", "Comma-separated sections: capacity, fidelity, memory, arrival, token-count, e2e.").Default(strings.Join(full.Sections, ",")).String()
	niceness := cmd.Flag("nice", "Niceness of the client and simulator children (nice -n); negative shields them from other load on a shared machine and needs root; 0 leaves it.").Default(strconv.Itoa(full.Nice)).Int()
	noPin := cmd.Flag("no-pin", "Do not pin the client and the simulator to separate cores with taskset.").Bool()
	capStreams := cmd.Flag("capacity.streams", "Concurrent streams for the capacity points.").Default(joinInts(full.CapacityStreams)).String()
	capDur := cmd.Flag("capacity.duration", "Duration of each capacity point.").Default(full.CapacityDuration.String()).Duration()
	capTokens := cmd.Flag("capacity.output-tokens", "Output tokens per capacity request.").Default(strconv.Itoa(full.CapacityTokens)).Int()
	fidStreams := cmd.Flag("fidelity.streams", "Concurrent streams for the fidelity points.").Default(joinInts(full.FidelityStreams)).String()
	fidReqs := cmd.Flag("fidelity.requests", "Least measured requests per stream, after a warm-up request; raised to reach --fidelity.min-samples TTFT samples per point.").Default(strconv.Itoa(full.FidelityRequests)).Int()
	fidSamples := cmd.Flag("fidelity.min-samples", "TTFT samples to reach at each fidelity point (bounded to ~15 s of requests per point); 0 leaves --fidelity.requests as is.").Default(strconv.Itoa(full.FidelityMinSamples)).Int()
	fidClocks := cmd.Flag("fidelity.clocks", "Client clocks to run each fidelity point with, side by side: kernel, user.").Default("kernel,user").String()
	fidLoaded := cmd.Flag("fidelity.load-client", "Run a busy loop pinned to the client's core, at its niceness, through every fidelity point: the client shares its core.").Bool()
	fidStart := cmd.Flag("fidelity.start", "How the fidelity streams start: staggered (spread over one request duration, a steady load) or burst (all at the same instant).").Default(full.FidelityStart).Enum(selftest.StartStaggered, selftest.StartBurst)
	memStreams := cmd.Flag("memory.streams", "Idle open streams for the memory points.").Default(joinInts(full.MemoryStreams)).String()
	rates := cmd.Flag("arrival.rates", "Poisson request rates (req/s) for the arrival points.").Default("100,1000,5000").String()
	arrDur := cmd.Flag("arrival.duration", "Duration of each arrival point.").Default(full.ArrivalDuration.String()).Duration()
	role := cmd.Flag("role", "Internal: run as the server or client child.").Hidden().Enum("", "server", "client")
	spec := cmd.Flag("spec", "Internal: the child's JSON spec.").Hidden().String()

	return func(ctx context.Context, env *cliEnv) error {
		switch *role {
		case "server":
			var s selftest.ServerSpec
			if err := json.Unmarshal([]byte(*spec), &s); err != nil {
				return fmt.Errorf("--spec: %w", err)
			}
			return selftest.Serve(ctx, s, env.Stdin, env.Stdout)
		case "client":
			var s selftest.ClientSpec
			if err := json.Unmarshal([]byte(*spec), &s); err != nil {
				return fmt.Errorf("--spec: %w", err)
			}
			return selftest.RunClient(ctx, s, env.Stdout)
		}
		o := full
		if *quick {
			o = selftest.Quick()
		} else {
			var err error
			o.CapacityDuration, o.CapacityTokens, o.FidelityRequests, o.ArrivalDuration = *capDur, *capTokens, *fidReqs, *arrDur
			o.FidelityMinSamples, o.FidelityLoaded = *fidSamples, *fidLoaded
			o.FidelityClocks = nil
			for c := range strings.SplitSeq(*fidClocks, ",") {
				switch c := prober.Clock(strings.TrimSpace(c)); c {
				case prober.ClockKernel, prober.ClockUser:
					o.FidelityClocks = append(o.FidelityClocks, c)
				default:
					return fmt.Errorf("--fidelity.clocks: unknown clock %q (want kernel or user)", c)
				}
			}
			if o.CapacityStreams, err = parseInts(*capStreams); err != nil {
				return fmt.Errorf("--capacity.streams: %w", err)
			}
			if o.FidelityStreams, err = parseInts(*fidStreams); err != nil {
				return fmt.Errorf("--fidelity.streams: %w", err)
			}
			if o.MemoryStreams, err = parseInts(*memStreams); err != nil {
				return fmt.Errorf("--memory.streams: %w", err)
			}
			if o.ArrivalRates, err = parseFloats(*rates); err != nil {
				return fmt.Errorf("--arrival.rates: %w", err)
			}
		}
		o.FidelityStart = *fidStart
		o.Sections = strings.Split(*sections, ",")
		for _, s := range o.Sections {
			switch s {
			case "capacity", "fidelity", "memory", "arrival", "token-count", "e2e":
			default:
				return fmt.Errorf("--sections: unknown section %q", s)
			}
		}
		o.Pin, o.Nice = !*noPin, *niceness
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Exe = exe
		start := time.Now()
		err = selftest.Run(ctx, o, env.Stdout, env.Stderr)
		fmt.Fprintf(env.Stdout, "selftest took %s\n", time.Since(start).Round(time.Second))
		return err
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseFloats parses a comma-separated list of positive numbers.
func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}
