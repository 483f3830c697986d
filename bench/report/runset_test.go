package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/bench"
)

// TestReportGroupsRuns: a file of several runs (bench --runs N) and an
// A/B pair of such files are drawn as sets, read by Load from the files
// as `servingprobe report` reads them: each side's figure is the mean
// over its runs with the spread between them and each run's value, and
// the second side's change carries compare's verdict from the spread
// between runs (a TTFT twice as long, significant, coloured worse; a
// throughput that moved within the spread, "~" and uncoloured), not one
// column a run as unrelated entries.
func TestReportGroupsRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ttfts, thr []float64) string {
		var b bytes.Buffer
		for i := range ttfts {
			s := ciRun(ttfts[i], 10)
			s.TTFT.Median, s.RequestThroughput = ttfts[i], thr[i]
			rec, err := s.Record(bench.JSONOptions{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(rec)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.jsonl", []float64{100, 104, 96}, []float64{50, 52, 48})
	b := write("b.jsonl", []float64{200, 208, 192}, []float64{51, 47, 50})
	draw := func(paths ...string) string {
		runs, err := Load(paths...)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Write(&out, runs, Options{Now: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	one := draw(a)
	for _, want := range []string{
		`<title>servingprobe runs: a.jsonl (3 runs)</title>`,
		`<tr><td>Median TTFT (ms)</td><td class="num">100.00</td><td class="num">4.0%</td><td class="num">100.00, 104.00, 96.00</td></tr>`,
		`Summary: a.jsonl:3`,
	} {
		if !strings.Contains(one, want) {
			t.Errorf("one file of 3 runs: the page lacks %s", want)
		}
	}
	if strings.Contains(one, "Δ vs") {
		t.Error("one file of 3 runs is drawn as a comparison of its runs")
	}

	two := draw(a, b)
	for name, want := range map[string]string{
		"title":    `<title>servingprobe comparison of sets: a.jsonl \(3 runs\) against b.jsonl \(3 runs\)</title>`,
		"worse":    `<tr><td>Median TTFT \(ms\)</td><td class="num">100.00</td><td class="num">4.0%</td><td class="num">100.00, 104.00, 96.00</td><td class="num">200.00</td><td class="num">4.0%</td><td class="num">200.00, 208.00, 192.00</td><td class="num worse">\+100.0%</td><td class="num">\[[0-9.]+, [0-9.]+\]</td><td class="num worse">p(&lt;|=)0\.\d+ t</td></tr>`,
		"within":   `<tr><td>Request throughput \(req/s\)</td><td class="num">50.00</td>.*?<td class="num ">-1.3%</td><td class="num">[^<]*</td><td class="num ">~ \(p=[0-9.]+ t\)</td></tr>`,
		"note":     `Each figure is the mean over the side`,
		"each run": `Summary: b.jsonl:2`,
	} {
		if !regexp.MustCompile(want).MatchString(two) {
			t.Errorf("%s: the A/B page lacks %s", name, want)
		}
	}
}
