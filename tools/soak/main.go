// Command soak runs the daemon for a long time against the simulator and
// the hostile server, 20 targets of which a third are faulty, each probed
// every second, and reports the process's RSS, live heap, goroutines and
// open fds over time. They must stay flat. It is not a test: CI runs the
// two-minute version, testkit/e2e TestSoak.
//
//	go run ./tools/soak [-duration 30m] [-interval 1s] [-sample 30s] [-targets 20] [-tokenizer default|words]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/testkit/hostile"
	"github.com/servingprobe/servingprobe/tokenizer"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		duration = flag.Duration("duration", 30*time.Minute, "How long to probe.")
		interval = flag.Duration("interval", time.Second, "Probe interval of every target.")
		sample   = flag.Duration("sample", 30*time.Second, "Sampling period of the report.")
		targets  = flag.Int("targets", 20, "Number of targets; a third of them are faulty.")
		tok      = flag.String("tokenizer", "default", "Tokenizer of the probes: default (the embedded Qwen3, as serve uses) or words (cheap).")
	)
	flag.Parse()
	o := hostile.SoakOptions{Duration: *duration, Interval: *interval, SampleEvery: *sample, Targets: *targets, Progress: os.Stdout}
	switch *tok {
	case "default":
		o.Tokenizer = func(string) (datasets.Tokenizer, error) { return tokenizer.Default() }
	case "words":
	default:
		fmt.Fprintf(os.Stderr, "soak: unknown -tokenizer %q\n", *tok)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("soak: %d targets every %s for %s\n", *targets, *interval, *duration)
	rep, err := hostile.Soak(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	fmt.Printf("faulty targets: %v\n", rep.Faulty)
	fmt.Printf("before start:   %s\n", rep.Before)
	if n := len(rep.Samples); n > 1 {
		fmt.Printf("first sample:   %s\n", rep.Samples[0])
		fmt.Printf("last sample:    %s\n", rep.Samples[n-1])
	}
	fmt.Printf("after shutdown: %s\n", rep.After)
	return 0
}
