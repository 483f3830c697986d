package prober

import (
	"maps"
	"strings"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/datasets"
)

// ModuleOptions is the one mapping from a configured target and module to
// what a request sends. Daemon probes, /probe, `servingprobe probe` (with
// or without a config file) and daemon bench windows all start from it,
// so that a module's temperature, top_p, include_usage, extra_body and
// headers mean the same on every path. Streaming, ignore_eos and
// include_usage default to on: probes ask for a fixed length, counted by
// the server, so that successive probes cost the same and compare.
func ModuleOptions(t config.Target, m config.Module) RequestOptions {
	boolOr := func(p *bool, d bool) bool {
		if p == nil {
			return d
		}
		return *p
	}
	// An answer that is judged must end where the model ends it: with
	// ignore_eos a JSON answer runs on past its closing brace.
	judged := m.Checks.Any() || m.ResponseFormat != nil || len(m.Tools) > 0
	return RequestOptions{
		BaseURL:      strings.TrimRight(t.URL, "/"),
		Model:        t.Model,
		Stream:       boolOr(m.Stream, true),
		IgnoreEOS:    boolOr(m.IgnoreEOS, !judged),
		Temperature:  m.Temperature,
		TopP:         m.TopP,
		IncludeUsage: boolOr(m.IncludeUsage, true),
		ExtraBody:    maps.Clone(m.ExtraBody),
		Headers:      maps.Clone(m.Headers),
		// A traceparent set by http_client_config is added below us, by
		// its round tripper: ours would make it a second, invalid one.
		NoTraceparent: t.NoTraceparent || clientSetsHeader(t, TraceparentHeader),

		ResponseFormat: maps.Clone(m.ResponseFormat),
		Tools:          m.Tools,
		ToolChoice:     m.ToolChoice,
	}
}

// clientSetsHeader says t's http_client_config adds header name to every
// request.
func clientSetsHeader(t config.Target, name string) bool {
	if t.HTTPClientConfig.HTTPHeaders == nil {
		return false
	}
	for k := range t.HTTPClientConfig.HTTPHeaders.Headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// ModuleDataset is the one mapping from a module to the dataset its
// requests draw from: the dataset's name and its options (bench_serving's
// defaults under the module's settings). The daemon's probes
// (NewProbeBuilder) and a bench window of the module (runner.ModuleSpec)
// both start from it; the module's seed seeds both draws.
func ModuleDataset(m config.Module) (string, datasets.Options) {
	o := datasets.DefaultOptions()
	o.DatasetPath = m.DatasetPath
	o.ApplyChatTemplate = m.ApplyChatTemplate
	o.FixedPrompt, o.FixedOutputLen = m.Prompt, m.OutputLen
	o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio = m.InputLen, m.OutputLen, m.RangeRatio
	o.SharegptOutputLen = m.OutputLen
	if n := m.ConversationTurns(); n > 0 {
		o.ConversationTurns, o.ConversationTurnInputLen = n, m.ConversationTurnInputLen()
	}
	return m.Dataset, o
}
