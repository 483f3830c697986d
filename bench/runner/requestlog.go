package runner

import (
	"context"
	"time"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/internal/pyfmt"
	"github.com/servingprobe/servingprobe/prober"
)

// --print-requests is bench_serving's two lines per request, written by
// bench.RequestLog. The engine's part is what a run adds to them: the run's
// fields (newRequestLogRun, runExtraFields) and the times each request
// starts and ends (logRequests).

// newRequestLogRun describes run p for its request log.
func newRequestLogRun(p *Prepared) bench.RequestLogRun {
	s := p.Spec
	params := s.RunParams()
	return bench.RequestLogRun{
		APIURL: s.BaseURL + p.Info.Path, Model: p.Model,
		Extra:        runExtraFields(s, p.Info),
		Stream:       !s.DisableStream,
		PerChunk:     !params.PerTokenITL(),
		TextChunks:   p.Info.TextChunks,
		EmptySuccess: params.Compat.EmptySuccess,
		CacheReport:  s.CacheReport,
		SpecAccept:   p.Info.ReadsSpecAccept(!s.DisableStream),
		Origin:       processStart,
	}
}

// runExtraFields is bench_serving's extra_request_body as run_benchmark
// builds it: the user's --extra-request-body, then
// return_cached_tokens_details for --cache-report on sglang-oai and
// sglang-oai-chat, then the --fake-prefill fields. A key already present
// keeps its place, as a Python dict does. The user's keys come sorted: a
// Go map does not keep the order of the JSON they came in.
func runExtraFields(s Spec, info prober.BackendInfo) []pyfmt.Field {
	fields := pyfmt.SortedFields(s.ExtraBody)
	if s.CacheReport && info.CacheReportDetails {
		// bench_serving's --cache-report asks sglang's OpenAI routes for
		// the cache tiers' split (sglext.cached_tokens_details). It sets
		// the key in the parsed --extra-request-body, so it wins over the
		// user's value, as the fake-prefill fields do.
		fields = pyfmt.SetField(fields, "return_cached_tokens_details", true)
	}
	for _, f := range fakePrefillFields(s) {
		fields = pyfmt.SetField(fields, f.Key, f.Value)
	}
	return fields
}

// logRequests is do with l's start line before and end line after each
// request; the times are time.time() when do is called and when it
// returns, as bench_serving's request function reads them.
func logRequests(l *bench.RequestLog, do func(context.Context, datasets.Prompt, time.Time) prober.Result) func(context.Context, datasets.Prompt, time.Time) prober.Result {
	return func(ctx context.Context, prompt datasets.Prompt, scheduled time.Time) prober.Result {
		id := l.Started(time.Now(), prompt)
		r := do(ctx, prompt, scheduled)
		l.Ended(id, time.Now(), prompt, &r)
		return r
	}
}

// processStart is the origin of start_time (see bench.RequestLogRun.Origin).
var processStart = time.Now()
