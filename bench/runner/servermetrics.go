package runner

import (
	"context"
	"net/url"
	"strings"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/servermetrics"
)

// serverMetricsURLs are the endpoints a run reads: --server-metrics, else
// the base URL's /metrics (vLLM and sglang serve it at the root, whatever
// path the API is under). The default is tried, not required: a server
// without it gives a block that says so.
func serverMetricsURLs(s Spec) (urls []string, explicit bool) {
	if s.NoServerMetrics {
		return nil, false
	}
	if len(s.ServerMetrics) > 0 {
		return s.ServerMetrics, true
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil || u.Host == "" {
		return nil, false
	}
	return []string{(&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/metrics"}).String()}, false
}

// ServerMetricsURLs are the endpoints a bench window on t reads
// (serverMetricsURLs of its ModuleSpec), for the daemon's own reads of the
// same server between windows (live headroom).
func ServerMetricsURLs(t config.Target) []string {
	urls, _ := serverMetricsURLs(Spec{BaseURL: strings.TrimRight(t.URL, "/"), ServerMetrics: t.ServerMetricsURLs(), NoServerMetrics: t.NoServerMetrics})
	return urls
}

// serverWatches are the reads of one measured run. explicit is whether
// the endpoints were named: an unnamed default that did not answer, or
// answered without an engine's metrics, leaves no block (the log says
// why), so that a bench against a server without /metrics prints what it
// always printed.
type serverWatches struct {
	ws       []*servermetrics.Watch
	explicit bool
}

// startServerMetrics reads every endpoint once before the measured run
// (each read bounded by servermetrics.DefaultTimeout) and starts sampling
// those that answered. Their reads use a client of their own, so they
// never take a connection from the measured requests.
func startServerMetrics(ctx context.Context, s Spec, o servermetrics.Options, logger log.Logger) serverWatches {
	urls, explicit := serverMetricsURLs(s)
	ws := serverWatches{explicit: explicit}
	for _, u := range urls {
		w := servermetrics.Start(ctx, u, o)
		if m := w.Missing(); m != "" {
			lvl := level.Info
			if explicit {
				lvl = level.Warn
			}
			lvl(logger).Log("msg", "Server metrics not read", "url", config.RedactURL(u), "why", m)
		}
		ws.ws = append(ws.ws, w)
	}
	return ws
}

// stop reads every endpoint at the end of the run; completed is how many
// requests succeeded, which the end read waits for the server to count.
// An endpoint whose block is missing for a reason found only now (the
// end read failed, or the endpoint exposes no engine's metrics) is logged
// as a failed start read is: a warning when it was named.
func (ws serverWatches) stop(ctx context.Context, completed int, logger log.Logger) []servermetrics.Report {
	var rs []servermetrics.Report
	for _, w := range ws.ws {
		r := w.Stop(ctx, completed)
		// The start read's failure is logged already; a DCGM exporter has
		// no engine metrics by design.
		if r.Missing != "" && w.Missing() == "" && r.Missing != servermetrics.GPUOnly {
			lvl := level.Info
			if ws.explicit {
				lvl = level.Warn
			}
			lvl(logger).Log("msg", "Server metrics not read", "url", r.Source, "why", r.Missing)
		}
		if r.Missing != "" && !ws.explicit {
			continue
		}
		rs = append(rs, r)
	}
	return rs
}
