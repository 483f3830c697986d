package runner

import (
	"maps"
	"strings"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// ModuleSpec is the one mapping from a configured target and module to a
// bench: what the module's probes send, and the dataset they draw from.
// A bench window starts from it (its body is a patch over it). Its
// dataset and request options are prober.ModuleDataset's and
// prober.ModuleOptions', the mappings the daemon's probes are built from,
// so that a window measures what the module probes.
//
// A module states no tokenizer for the embedded default, as its probes
// do; "server" (the server counts) stays "server", which a bench refuses
// because its datasets need a local tokenizer.
func ModuleSpec(t config.Target, m config.Module) Spec {
	s := DefaultSpec()
	s.Backend = t.Backend
	s.BaseURL = strings.TrimRight(t.URL, "/")
	s.Model = t.Model
	s.Tokenizer = m.Tokenizer
	if s.Tokenizer == "" {
		s.Tokenizer = tokenizer.DefaultName
	}
	s.Dataset, s.Options = prober.ModuleDataset(m)
	s.Seed = m.Seed
	// A window reads the server's metrics where the target says, as the
	// CLI's --server-metrics and --no-server-metrics.
	s.ServerMetrics, s.NoServerMetrics = t.ServerMetricsURLs(), t.NoServerMetrics
	s.NoTraceparent = t.NoTraceparent

	// What a request sends: the module's body settings, with streaming,
	// ignore_eos and headers held here once.
	mo := prober.ModuleOptions(t, m)
	s.DisableStream, s.DisableIgnoreEOS = !mo.Stream, !mo.IgnoreEOS
	s.Headers = maps.Clone(mo.Headers)
	mo.Stream, mo.IgnoreEOS, mo.Headers = false, false, nil
	mo.BaseURL, mo.Model = "", ""
	s.Module = &mo
	s.ResponseFormat, s.Tools, s.ToolChoice, s.Checks = m.ResponseFormat, m.Tools, m.ToolChoice, m.Checks
	if m.LoRA != "" {
		s.LoRANames = []string{m.LoRA}
	}
	return s
}

// answerModule is the Spec's answer keys as a module's, the shape
// prober.ModuleChecker judges.
func (s *Spec) answerModule() config.Module {
	return config.Module{ResponseFormat: s.ResponseFormat, Tools: s.Tools, ToolChoice: s.ToolChoice, Checks: s.Checks}
}
