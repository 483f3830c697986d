package exporter

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// docRow is one row of a metrics table in docs/metrics.md.
type docRow struct {
	Type   string
	Labels []string
}

var docRowRE = regexp.MustCompile("^\\| `(servingprobe_[a-z0-9_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")

// readMetricsDoc returns the rows of every table in docs/metrics.md, with the
// /probe table separate because those metrics live in a per-request registry.
func readMetricsDoc(t *testing.T, path string) (daemon, probe map[string]docRow) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	daemon, probe = map[string]docRow{}, map[string]docRow{}
	into, inProbe := daemon, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## `/probe` metrics") {
			into, inProbe = probe, true
		} else if strings.HasPrefix(line, "## ") && inProbe {
			into = nil // past the /probe table
		}
		if into == nil {
			continue
		}
		m := docRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var labels []string
		for l := range strings.SplitSeq(m[3], ",") {
			if l = strings.TrimSpace(l); l != "" && l != "–" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		if _, dup := into[m[1]]; dup {
			t.Errorf("docs/metrics.md lists %s twice", m[1])
		}
		into[m[1]] = docRow{Type: m[2], Labels: labels}
	}
	return daemon, probe
}

func familiesToRows(fams map[string]*dto.MetricFamily) map[string]docRow {
	rows := map[string]docRow{}
	for name, mf := range fams {
		if !strings.HasPrefix(name, namespace+"_") {
			continue
		}
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		var ls []string
		for l := range labels {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		rows[name] = docRow{Type: strings.ToLower(mf.GetType().String()), Labels: ls}
	}
	return rows
}

// TestMetricsDocMatchesExposition checks docs/metrics.md against the golden
// exposition, which TestGoldenExposition keeps equal to a real gather of a
// registry in which every metric has a series, plus build_info and the
// /probe registry gathered here.
func TestMetricsDocMatchesExposition(t *testing.T) {
	daemonDoc, probeDoc := readMetricsDoc(t, "../docs/metrics.md")
	daemonPageDoc, _ := readMetricsDoc(t, "../docs/daemon.md")

	f, err := os.Open("testdata/metrics.golden.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(namespace))
	built, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range built {
		fams[mf.GetName()] = mf
	}
	if diff := cmp.Diff(familiesToRows(fams), daemonDoc); diff != "" {
		t.Errorf("docs/metrics.md differs from the exposition (-exposition +doc):\n%s", diff)
	}
	if diff := cmp.Diff(familiesToRows(fams), daemonPageDoc); diff != "" {
		t.Errorf("docs/daemon.md's metrics table differs from the exposition (-exposition +daemon.md):\n%s", diff)
	}

	preg := prometheus.NewRegistry()
	pm := newProbeMetrics(preg)
	pm.outcome.WithLabelValues("success").Set(1)
	// The timings are registered only when measured; the table lists them.
	preg.MustRegister(pm.ttft, pm.e2e, pm.tpot)
	got, err := preg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	pfams := map[string]*dto.MetricFamily{}
	for _, mf := range got {
		pfams[mf.GetName()] = mf
	}
	if diff := cmp.Diff(familiesToRows(pfams), probeDoc); diff != "" {
		t.Errorf("docs/metrics.md /probe table differs from the /probe registry (-registry +doc):\n%s", diff)
	}
}
