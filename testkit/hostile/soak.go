package hostile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/simulator"
)

// SoakOptions configure Soak.
type SoakOptions struct {
	Duration time.Duration // default 30 minutes
	Interval time.Duration // probe interval of every target; default 1 s
	// SampleEvery is the sampling period; default 10 s.
	SampleEvery time.Duration
	// Targets is the number of targets, a third of them faulty; default 20.
	Targets int
	// Dir holds the config file; default a temporary directory.
	Dir string
	// Tokenizer resolves module tokenizers; default WordTokenizerResolver.
	Tokenizer func(string) (datasets.Tokenizer, error)
	// Progress, if set, gets one line per sample.
	Progress io.Writer
	Logger   log.Logger
}

// Sample is the process state at one moment of a soak.
type Sample struct {
	Elapsed    time.Duration
	RSSBytes   int64
	HeapBytes  uint64 // live heap objects
	Goroutines int
	FDs        int
	Probes     int // finished probes so far, every target
	Failed     int // of which not success
}

// SoakReport is the outcome of a soak.
type SoakReport struct {
	// Before is the process before anything started; After after the
	// daemon and every server stopped.
	Before, After Sample
	Samples       []Sample
	Targets       int
	Faulty        []string
}

// soakFaults are the faulty targets' faults, a mix of every kind: refused,
// HTTP errors, stalls hit by the timeout, resets, parse errors and size caps.
var soakFaults = []struct {
	hostile Fault
	sim     simulator.Fault
	refused bool
}{
	{refused: true},
	{sim: simulator.Fault500},
	{sim: simulator.FaultResetMidStream},
	{sim: simulator.FaultStallMidStream},
	{hostile: HugeEvent},
	{hostile: EndlessFast},
	{sim: simulator.FaultMalformedChunk},
	{hostile: SlowLoris},
	{sim: simulator.Fault429},
	{hostile: GzipBomb},
}

// Soak runs a daemon against the simulator and the hostile server: o.Targets
// targets, one in three faulty, probed every o.Interval for o.Duration,
// while /metrics is scraped every 5 s. It samples RSS, live heap, goroutines
// and open fds every o.SampleEvery.
func Soak(ctx context.Context, o SoakOptions) (SoakReport, error) {
	if o.Duration <= 0 {
		o.Duration = 30 * time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 10 * time.Second
	}
	if o.Targets <= 0 {
		o.Targets = 20
	}
	if o.Tokenizer == nil {
		o.Tokenizer = WordTokenizerResolver
	}
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	rep := SoakReport{Targets: o.Targets}
	rep.Before = sampleProcess(0)

	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "servingprobe-soak-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	err := func() error {
		sim, stopSim, err := StartSimulator()
		if err != nil {
			return err
		}
		defer stopSim()
		hs := NewServer()
		defer hs.Close()
		closed, release, err := ClosedURL()
		if err != nil {
			return err
		}
		defer release()

		timeout := o.Interval * 8 / 10
		nFaulty := o.Targets / 3
		var targets []Target
		for i := range o.Targets {
			t := Target{Name: fmt.Sprintf("t%02d", i), URL: sim, Model: SimModel, Interval: o.Interval, Timeout: timeout}
			if i%3 == 2 && len(rep.Faulty) < nFaulty {
				f := soakFaults[len(rep.Faulty)%len(soakFaults)]
				switch {
				case f.refused:
					t.URL, t.Name = closed, t.Name+"-refused"
				case f.sim != "":
					t.SimFault, t.Name = f.sim, t.Name+"-sim-"+string(f.sim)
				default:
					t.URL, t.Model, t.Name = hs.URL(f.hostile), "", t.Name+"-"+string(f.hostile)
				}
				rep.Faulty = append(rep.Faulty, t.Name)
			}
			targets = append(targets, t)
		}
		path := filepath.Join(o.Dir, "soak.yml")
		extra := "bench:\n  results_dir: " + strconv.Quote(filepath.Join(o.Dir, "results")) + "\n"
		if err := os.WriteFile(path, []byte(Config(targets, extra)), 0o600); err != nil {
			return err
		}
		d, err := exporter.New(exporter.Options{
			ConfigFile: path, Logger: o.Logger, Seed: 1,
			BuildProbe: prober.NewProbeBuilder(prober.ProbeBuilderOptions{Tokenizer: o.Tokenizer}),
		})
		if err != nil {
			return err
		}
		web := httptest.NewServer(d.Handler())
		defer web.Close()
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- d.Run(runCtx) }()

		start := time.Now()
		sampleT := time.NewTicker(o.SampleEvery)
		defer sampleT.Stop()
		scrapeT := time.NewTicker(5 * time.Second)
		defer scrapeT.Stop()
		end := time.NewTimer(o.Duration)
		defer end.Stop()
		client := &http.Client{Timeout: 10 * time.Second}
		defer client.CloseIdleConnections()
		take := func() {
			s := sampleProcess(time.Since(start))
			s.Probes, s.Failed = countProbes(d)
			rep.Samples = append(rep.Samples, s)
			if o.Progress != nil {
				fmt.Fprintln(o.Progress, s)
			}
		}
		take()
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case <-end.C:
				break loop
			case <-sampleT.C:
				take()
			case <-scrapeT.C:
				if resp, err := client.Get(web.URL + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
		take()
		cancel()
		return <-done
	}()
	// Let the closed connections' goroutines and fds go before the last
	// sample.
	for range 50 {
		rep.After = sampleProcess(0)
		if rep.After.Goroutines <= rep.Before.Goroutines+1 && rep.After.FDs <= rep.Before.FDs {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return rep, err
}

func (s Sample) String() string {
	return fmt.Sprintf("t=%-6s rss_mib=%-6.1f heap_mib=%-6.1f goroutines=%-4d fds=%-4d probes=%-6d failed=%d",
		s.Elapsed.Round(time.Second), float64(s.RSSBytes)/(1<<20), float64(s.HeapBytes)/(1<<20), s.Goroutines, s.FDs, s.Probes, s.Failed)
}

func countProbes(d *exporter.Daemon) (total, failed int) {
	mfs, err := d.Registry().Gather()
	if err != nil {
		return -1, -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "servingprobe_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n := int(m.GetCounter().GetValue())
			total += n
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() != "success" {
					failed += n
				}
			}
		}
	}
	return total, failed
}

// sampleProcess reads this process's RSS and fd count from /proc (Linux;
// -1 elsewhere), its live heap and its goroutines.
func sampleProcess(elapsed time.Duration) Sample {
	s := Sample{Elapsed: elapsed, RSSBytes: -1, FDs: -1, Goroutines: runtime.NumGoroutine()}
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(ms)
	s.HeapBytes = ms[0].Value.Uint64()
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						s.RSSBytes = kb << 10
					}
				}
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.FDs = len(ents)
	}
	return s
}
