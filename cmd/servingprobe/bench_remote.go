package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"

	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	promconfig "github.com/prometheus/common/config"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/benchrun"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/report"
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

// remoteRequest maps the flags that a daemon run honours onto the API
// body. The server address, tokenizer and dataset files come from the
// daemon's config; flags that only make sense locally are refused.
func (f *benchFlags) remoteRequest() (benchrun.BenchRequest, error) {
	if f.remote.target == "" {
		return benchrun.BenchRequest{}, fmt.Errorf("--remote needs --remote.target (a target name of the daemon's config)")
	}
	for name, set := range map[string]bool{
		"base-url": f.baseURL != "", "port": f.port != 0, "model": f.model != "", "tokenizer": f.tokenizer != "",
		"dataset-path": f.datasetPath != "", "extra-request-body": f.extraRequestBody != "", "header": len(f.headers) > 0,
		"lora-name": len(f.loraNames) > 0, "profile": f.profile, "flush-cache": f.flushCache,
		"use-trace-timestamps": f.useTraceTimestamps, "ramp-up-strategy": f.rampUpStrategy != "",
	} {
		if set {
			return benchrun.BenchRequest{}, fmt.Errorf("--%s cannot be used with --remote: the daemon's config defines the target and its module", name)
		}
	}
	req := benchrun.BenchRequest{
		Target: f.remote.target, Module: f.remote.module,
		Burstiness: &f.burstiness, Seed: &f.seed, WarmupRequests: &f.warmupRequests,
		DisableStream: f.disableStream, DisableIgnoreEOS: f.disableIgnoreEOS,
		Compat: strings.Join(f.compat, ","), Goodput: f.goodput, Tag: f.tag,
		NumPrompts: &f.numPrompts,
	}
	if f.datasetName != "sharegpt" { // the default means "the module's dataset"
		req.DatasetName = f.datasetName
		req.RandomInputLen, req.RandomOutputLen, req.RandomRangeRatio = &f.randomInputLen, &f.randomOutputLen, &f.randomRangeRatio
	}
	if !math.IsInf(f.requestRate, 1) {
		rr := benchrun.RequestRate(f.requestRate)
		req.RequestRate = &rr
	}
	if f.maxConcurrency > 0 {
		req.MaxConcurrency = &f.maxConcurrency
	}
	if f.maxDuration > 0 {
		req.MaxDuration = f.maxDuration.String()
	}
	sw, err := f.sweep.request()
	if err != nil {
		return req, err
	}
	if req.Sweep = sw; sw != nil && (len(sw.RequestRates) > 0 || sw.Auto || (sw.SLO != "" && sw.SLOSearch == bench.ByRequestRate)) {
		req.RequestRate = nil // each point sets its own
	}
	if sw != nil && (len(sw.MaxConcurrency) > 0 || sw.SLOSearch == bench.ByMaxConcurrency) {
		req.MaxConcurrency = nil
	}
	return req, nil
}

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
	req, err := f.remoteRequest()
	if err != nil {
		return err
	}
	base, err := url.Parse(strings.TrimRight(f.remote.url, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return fmt.Errorf("--remote %q: want an http(s) URL", f.remote.url)
	}
	c, err := f.remote.client()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(req)
	var view benchrun.BenchView
	if err := remoteCall(ctx, c, http.MethodPost, base.String()+"/api/v1/benches", body, http.StatusAccepted, &view); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "Bench run %s accepted on %s\n", view.ID, base.Redacted())
	show := !f.disableTqdm && isTerminal(env.Stderr)
	tick := time.NewTicker(f.remote.pollInterval)
	defer tick.Stop()
	tl, ok := env.Stderr.(*termLine)
	if !ok {
		tl = &termLine{w: env.Stderr}
	}
	var meter rateMeter
	for view.Ended == nil {
		select {
		case <-ctx.Done():
			// Interrupted: cancel the remote run too, so that it does not
			// keep loading the target.
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = remoteCall(cctx, c, http.MethodDelete, base.String()+"/api/v1/benches/"+view.ID, nil, http.StatusAccepted, nil)
			cancel()
			return ctx.Err()
		case <-tick.C:
		}
		if err := remoteCall(ctx, c, http.MethodGet, base.String()+"/api/v1/benches/"+view.ID, nil, http.StatusOK, &view); err != nil {
			return err
		}
		if show && view.Progress != nil && view.Progress.Total > 0 {
			tl.redraw(progressLine(*view.Progress, meter.add(time.Now(), view.Progress.Done)), false)
		}
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
	var sum bench.Summary
	if err := json.Unmarshal(view.Summary, &sum); err != nil {
		return fmt.Errorf("decode the run's summary: %w", err)
	}
	p := bench.Params{Backend: sum.Backend, DatasetName: sum.DatasetName, NumPrompts: f.numPrompts,
		RandomInputLen: sum.RandomInputLen, RandomOutputLen: sum.RandomOutputLen}
	return writeBenchOutput(env.Stdout, &sum, f, p)
}

// remoteCall does one API call and decodes a JSON answer into out.
func remoteCall(ctx context.Context, c *http.Client, method, u string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, u, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
