package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/exporter"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/report"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// DaemonRunner runs the daemon's bench windows with the same code as
// the CLI: a validated API request becomes a Spec on the target's
// client (its http_client_config carries auth and TLS) and module.
func DaemonRunner() BenchRunFunc {
	return func(ctx context.Context, job BenchJob) (BenchOutput, error) {
		s, err := daemonSpec(job.Spec)
		if err != nil {
			return BenchOutput{}, err
		}
		t := job.Spec.Target
		env := Env{
			Logger: job.Logger, Target: &t, Module: job.Spec.ModuleName,
			Observer: job.Observer, Progress: job.Progress, OnStart: job.Started,
		}
		// The window's report draws every request.
		s.Details, s.DetailsNoTexts = true, true
		prep, err := Prepare(ctx, s, env)
		if err != nil {
			return BenchOutput{}, err
		}
		if w := job.Spec.Sweep; w != nil {
			return daemonSweep(ctx, prep, *w, env, job.ID)
		}
		out, runErr := prep.Run(ctx, env)
		if out == nil || out.Summary.Backend == "" {
			return BenchOutput{}, runErr
		}
		html := reportHTML(job.ID, []report.Run{{Name: job.ID, Summary: &out.Summary}})
		// The per-request data went into the report; the summary the API
		// and the results file keep stays small.
		out.Summary.Details = nil
		res, err := benchOutput(&out.Summary)
		res.Report = html
		return res, errors.Join(runErr, err)
	}
}

// reportHTML is a window's HTML report, nil if it cannot be drawn.
func reportHTML(id string, runs []report.Run) []byte {
	var b bytes.Buffer
	if err := report.Write(&b, runs, report.Options{Title: "servingprobe bench window " + id}); err != nil {
		return nil
	}
	return b.Bytes()
}

// daemonSweep runs a sweep window: each point's record as it ends, the
// answer at the end. A sweep cut short returns the points that ran.
func daemonSweep(ctx context.Context, prep *Prepared, w SweepSpec, env Env, id string) (BenchOutput, error) {
	var records []json.RawMessage
	var runs []report.Run
	res, runErr := prep.Sweep(ctx, env, w, func(pt SweepPoint) error {
		rec, err := pt.Summary.Record(bench.JSONOptions{Strict: true})
		if err != nil {
			return err
		}
		records = append(records, json.RawMessage(strings.TrimSpace(string(rec))))
		runs = append(runs, report.Run{Name: fmt.Sprintf("point %d", pt.Info.Index), Summary: pt.Summary})
		return nil
	})
	if res == nil || len(res.Points) == 0 {
		return BenchOutput{}, runErr
	}
	sw, h := sweepOutput(res, records)
	if runErr != nil {
		// A search cut short has no answer to export.
		h.Capacity = nil
	}
	return BenchOutput{Sweep: sw, Headline: h, Report: reportHTML(id, runs)}, runErr
}

// benchOutput is the API's form of a summary.
func benchOutput(sum *bench.Summary) (BenchOutput, error) {
	js, err := json.Marshal(sum)
	if err != nil {
		return BenchOutput{}, err
	}
	rec, err := sum.Record(bench.JSONOptions{Strict: true})
	if err != nil {
		return BenchOutput{}, err
	}
	return BenchOutput{
		Summary: js,
		Record:  json.RawMessage(strings.TrimSpace(string(rec))),
		Headline: exporter.BenchHeadline{
			RequestThroughput: sum.RequestThroughput,
			OutputThroughput:  sum.OutputThroughput,
			Completed:         sum.Completed,
			Failed:            sum.Failed,
		},
	}, nil
}

// daemonSpec maps a validated API request and its module onto a Spec.
func daemonSpec(b BenchSpec) (Spec, error) {
	t, m, req := b.Target, b.Module, b.Request
	s := DefaultSpec()
	s.Backend = t.Backend
	s.BaseURL = strings.TrimRight(t.URL, "/")
	s.Model = t.Model
	if m.Tokenizer == "server" {
		return s, errors.New("module tokenizer \"server\" is not supported for bench runs: the datasets need a local tokenizer (a path or hub id)")
	}
	s.Tokenizer = m.Tokenizer
	if s.Tokenizer == "" {
		// As for the module's probes: no tokenizer means the embedded one.
		s.Tokenizer = tokenizer.DefaultName
	}
	s.Dataset = b.Dataset
	o := &s.DatasetOptions
	o.DatasetPath = m.DatasetPath
	o.ApplyChatTemplate = m.ApplyChatTemplate
	o.FixedPrompt, o.FixedOutputLen = m.Prompt, b.OutputLen
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = b.InputLen, b.OutputLen, b.RangeRatio
	if m.Dataset == "sharegpt" && req.DatasetName == "" {
		o.SharegptOutputLen = m.OutputLen
	}
	s.NumPrompts = b.NumPrompts
	s.RequestRate = b.RequestRate
	if math.IsInf(s.RequestRate, 1) || s.RequestRate <= 0 {
		s.RequestRate = math.Inf(1)
	}
	s.Burstiness = b.Burstiness
	s.MaxConcurrency = b.MaxConcurrency
	s.MaxDuration = b.MaxDuration
	s.Seed = b.Seed
	s.WarmupRequests = b.WarmupRequests
	s.DisableStream = req.DisableStream || (m.Stream != nil && !*m.Stream)
	s.DisableIgnoreEOS = req.DisableIgnoreEOS || (m.IgnoreEOS != nil && !*m.IgnoreEOS)
	// The module's request settings, as its probes send them.
	mo := prober.ModuleOptions(t, m)
	s.Module = &mo
	s.Headers = m.Headers
	if m.LoRA != "" {
		s.LoRANames = []string{m.LoRA}
	}
	// Probed targets answer already; a long ready check would only hold
	// the target's bench slot.
	s.ReadyCheckTimeout = 0
	var err error
	if s.Compat, err = bench.ParseCompat(req.Compat); err != nil {
		return s, err
	}
	if g, err := bench.ParseGoodput(req.Goodput); err != nil {
		return s, err
	} else if len(g) > 0 {
		s.Goodput = g
	}
	s.Tag = req.Tag
	return s, nil
}
