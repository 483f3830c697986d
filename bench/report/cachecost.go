package report

import (
	"html/template"
	"strings"

	"github.com/servingprobe/servingprobe/bench"
)

// cacheCostSections show the run's prefix cache, energy and cost as the
// console printed them (bench's TableSections, which the JSONL read back
// holds too): bench_serving's "Cache Hit Details" with each metrics
// endpoint's "Cache Report vs Server", then servingprobe's "Energy" and
// "Cost". None when the run had none of them.
func cacheCostSections(s *bench.Summary) []section {
	var secs []section
	if rows := tableSections(s, "Cache Hit Details"); len(rows) > 0 {
		var b strings.Builder
		b.WriteString(string(consoleRows("cache-report", rows[0])))
		// The console's agreement sections come in the server blocks'
		// order, one per endpoint with a prefix-cache counter.
		var sources []string
		for i := range s.Server {
			if _, _, ok := s.CacheAgreement(&s.Server[i]); ok {
				sources = append(sources, s.Server[i].Source)
			}
		}
		for i, r := range tableSections(s, "Cache Report vs Server") {
			if i < len(sources) {
				b.WriteString(`<p class="note">Against ` + template.HTMLEscapeString(sources[i]) + `:</p>`)
			}
			b.WriteString(string(consoleRows(chartID("cache-vs-server", i), r)))
		}
		secs = append(secs, section{Title: "Prefix cache",
			Note: "bench_serving's Cache Hit Details: the prompt tokens the server said it served from its prefix cache, added up over the successful requests (sglang's per-tier split when it stated one), over their prompt tokens. " +
				"Beside it, each metrics endpoint's own prefix-cache counter over the run; the two differ by other traffic, warm-up or responses that stated no count.",
			Table: template.HTML(b.String())})
	}
	var b strings.Builder
	var notes []string
	if rows := tableSections(s, "Energy"); len(rows) > 0 {
		b.WriteString(string(consoleRows("energy", rows[0])))
		notes = append(notes, "The GPUs' energy over the run from a DCGM exporter: its energy counter's increase, or, labelled an estimate, its power gauge integrated over the reads.")
	}
	if rows := tableSections(s, "Cost"); len(rows) > 0 {
		b.WriteString(string(consoleRows("cost", rows[0])))
		notes = append(notes, "The cost is an estimate from --cost-per-hour: the hour's price times the run's duration, over one side's tokens, times a million. The whole price is charged to each side, so the two figures must not be added.")
	}
	if b.Len() > 0 {
		secs = append(secs, section{Title: "Energy and cost", Note: strings.Join(notes, " "), Table: template.HTML(b.String())})
	}
	return secs
}
