package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/bench/report"
	"github.com/servingprobe/servingprobe/bench/runner"
	"github.com/servingprobe/servingprobe/exporter"
)

// remoteFlags trigger a run on a daemon instead of running locally.
type remoteFlags struct {
	url, target, module       string
	user, passwordFile        string
	caFile, certFile, keyFile string
	insecureSkipVerify        bool
	pollInterval              time.Duration
}

func addRemoteFlags(cmd *kingpin.CmdClause, r *remoteFlags) {
	cmd.Flag("remote", "Trigger the run on a servingprobe daemon at this URL (POST /api/v1/benches), follow it and print the same table.").StringVar(&r.url)
	cmd.Flag("remote.target", "The daemon's configured target to benchmark (required with --remote).").StringVar(&r.target)
	cmd.Flag("remote.module", "The daemon's module giving the request shape (default: the target's first).").StringVar(&r.module)
	cmd.Flag("remote.basic-auth-user", "Basic auth user for the daemon.").StringVar(&r.user)
	cmd.Flag("remote.basic-auth-password-file", "File holding the basic auth password.").StringVar(&r.passwordFile)
	cmd.Flag("remote.tls-ca-file", "CA certificate to verify the daemon.").StringVar(&r.caFile)
	cmd.Flag("remote.tls-cert-file", "Client certificate for the daemon.").StringVar(&r.certFile)
	cmd.Flag("remote.tls-key-file", "Client key for the daemon.").StringVar(&r.keyFile)
	cmd.Flag("remote.tls-insecure-skip-verify", "Do not verify the daemon's certificate.").BoolVar(&r.insecureSkipVerify)
	cmd.Flag("remote.poll-interval", "How often to poll the run's progress.").Default("1s").DurationVar(&r.pollInterval)
}

// remoteBody is the bench window body --remote sends: the Spec's JSON
// keys that a body may set (api.BodyKeys) and that the user gave,
// plus the prompt count, seed, burstiness and warmup, whose bench_serving
// defaults a CLI user expects over the daemon's. Flags that set any other
// key are refused: the daemon's config defines the server, its address,
// tokenizer, files, headers and bodies.
func (f *benchFlags) remoteBody(s runner.Spec) ([]byte, error) {
	if f.remote.target == "" {
		return nil, fmt.Errorf("--remote needs --remote.target (a target name of the daemon's config)")
	}
	for _, name := range []string{"host", "port"} {
		if f.given(name) {
			return nil, fmt.Errorf("--%s cannot be used with --remote: the daemon's config defines the target and its module", name)
		}
	}
	// Flags that act on the run's requests as they happen: the daemon
	// sends them, and a run's record on the daemon keeps no per-request
	// data (the run's HTML report there draws every request).
	for _, local := range []struct {
		name string
		on   bool
		why  string
	}{
		{"output-details", f.outputDetails, "a daemon's run record keeps no per-request arrays; the run's HTML report on the daemon draws every request"},
		{"plot-throughput", f.plotThroughput, "a daemon's run record keeps no per-request times to plot; the run's HTML report on the daemon draws them"},
		{"print-requests", f.printRequests, "the daemon sends the requests, and its request lines stay in its own log"},
	} {
		if local.on {
			return nil, fmt.Errorf("--%s cannot be used with --remote: %s", local.name, local.why)
		}
	}
	send := map[string]bool{"num_prompts": true, "seed": true, "burstiness": true, "warmup_requests": true}
	names := slices.Sorted(maps.Keys(f.keys.key))
	for _, name := range names {
		if !f.given(name) {
			continue
		}
		k, _, _ := strings.Cut(f.keys.key[name], ".")
		if !slices.Contains(api.BodyKeys, k) {
			return nil, fmt.Errorf("--%s cannot be used with --remote: the daemon's config defines the target and its module", name)
		}
		send[k] = true
	}
	if send["dataset_name"] {
		// bench_serving's lengths go with its dataset, as locally.
		send["random_input_len"], send["random_output_len"], send["random_range_ratio"] = true, true, true
	}
	if s.Sweep != nil {
		send["sweep"] = true
		w := s.Sweep
		if w.Mode == bench.SweepRates || w.Mode == bench.SweepAuto || (w.Mode == bench.SweepSLO && w.By == bench.ByRequestRate) {
			delete(send, "request_rate") // each point sets its own
		} else {
			delete(send, "max_concurrency")
		}
	}
	all, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(all, &keys); err != nil {
		return nil, err
	}
	body := map[string]json.RawMessage{"target": mustJSON(f.remote.target)}
	if f.remote.module != "" {
		body["module"] = mustJSON(f.remote.module)
	}
	for k := range send {
		body[k] = keys[k]
	}
	return json.Marshal(body)
}

func mustJSON(v string) json.RawMessage { b, _ := json.Marshal(v); return b }

func (r *remoteFlags) client() (*http.Client, error) {
	cfg := promconfig.HTTPClientConfig{
		TLSConfig: promconfig.TLSConfig{CAFile: r.caFile, CertFile: r.certFile, KeyFile: r.keyFile, InsecureSkipVerify: r.insecureSkipVerify},
	}
	if r.user != "" {
		cfg.BasicAuth = &promconfig.BasicAuth{Username: r.user, PasswordFile: r.passwordFile}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return promconfig.NewClientFromConfig(cfg, "servingprobe-bench-remote")
}

func runRemoteBench(ctx context.Context, env *cliEnv, f *benchFlags) error {
	s, err := f.benchSpec(func(string) string { return "" })
	if err != nil {
		return err
	}
	body, err := f.remoteBody(s)
	if err != nil {
		return err
	}
	hc, err := f.remote.client()
	if err != nil {
		return err
	}
	c, err := api.NewClient(hc, f.remote.url)
	if err != nil {
		return fmt.Errorf("--remote %w", err)
	}
	view, err := c.Start(ctx, body)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "Bench run %s accepted on %s\n", view.ID, c.Redacted())
	show := !f.disableTqdm && isTerminal(env.Stderr)
	tl, ok := env.Stderr.(*termLine)
	if !ok {
		tl = &termLine{w: env.Stderr}
	}
	var meter rateMeter
	// Interrupted, Follow cancels the remote run too, so that it does not
	// keep loading the target.
	view, err = c.Follow(ctx, view, f.remote.pollInterval, func(v api.View) {
		if show && v.Progress != nil && v.Progress.Total > 0 {
			tl.redraw(progressLine(*v.Progress, meter.add(time.Now(), v.Progress.Done)), false)
		}
	})
	if err != nil {
		return err
	}
	if show && view.Progress != nil && view.Progress.Total > 0 {
		tl.redraw(progressLine(*view.Progress, meter.add(time.Now(), view.Progress.Done)), true)
	}
	if view.Sweep != nil {
		// Whatever points ran are kept, even when the sweep was cut short.
		if err := writeRemoteSweep(env.Stdout, view.Sweep, f); err != nil {
			return err
		}
		if f.report != "" {
			var runs []report.Run
			for i, raw := range view.Sweep.Records {
				s, err := bench.ParseRecord(raw)
				if err != nil {
					return err
				}
				runs = append(runs, report.Run{Name: fmt.Sprintf("point %d", i+1), Summary: s})
			}
			if len(runs) > 0 {
				runs[len(runs)-1].Search = view.Sweep.Search
			}
			if err := writeReport(env.Stdout, f.report, runs); err != nil {
				return err
			}
		}
	}
	if view.Status != exporter.BenchSucceeded {
		return fmt.Errorf("bench run %s %s: %s", view.ID, view.Status, view.Error)
	}
	if view.Sweep != nil {
		return nil
	}
	if len(view.Runs) > 0 {
		// A window of --runs: each run's table and record, as a local
		// set writes them (to one file), then the gate over them all.
		for i, raw := range view.Runs {
			sum, err := bench.ParseRecord(raw)
			if err != nil {
				return fmt.Errorf("decode run %d of the window: %w", i+1, err)
			}
			fmt.Fprintf(env.Stdout, "\n=== Run %d of %d: %s ===\n", i+1, len(view.Runs), view.ID)
			if f.outputFile == "" {
				f.outputFile = bench.DefaultOutputFile(remoteParams(sum, f), time.Now())
			}
			fs := *f
			fs.runs.more = i < len(view.Runs)-1
			if err := writeBenchOutput(env.Stdout, sum, &fs, remoteParams(sum, f)); err != nil {
				return err
			}
		}
		return nil
	}
	var sum bench.Summary
	if err := json.Unmarshal(view.Summary, &sum); err != nil {
		return fmt.Errorf("decode the run's summary: %w", err)
	}
	return writeBenchOutput(env.Stdout, &sum, f, remoteParams(&sum, f))
}

// remoteParams are the parameters a remote run's output is written with:
// what its record says it ran.
func remoteParams(sum *bench.Summary, f *benchFlags) bench.Params {
	p := bench.Params{Backend: sum.Backend, Dataset: sum.DatasetName, NumPrompts: f.spec.NumPrompts}
	p.RandomInputLen, p.RandomOutputLen = sum.RandomInputLen, sum.RandomOutputLen
	return p
}
