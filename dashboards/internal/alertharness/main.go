// Command alertharness measures servingprobe's alerting rules: how fast each
// alert fires on an injected regression and how often it fires on a healthy
// server. It draws probe results from a latency and failure model of a
// server (Model), writes them as the exporter's classic histogram buckets
// and counters, and has Prometheus's own rule engine (`promtool test rules`)
// evaluate the rule files over them. It prints a Markdown table.
//
//	go run ./dashboards/internal/alertharness            # the table in the docs
//	go run ./dashboards/internal/alertharness -short     # a quick check
//	go run ./dashboards/internal/alertharness -config my-knobs.yaml
//
// Every number the table shows comes from the model's draws; the model's
// parameters are assumptions, listed in Model.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/servingprobe/servingprobe/dashboards/internal/mixin"
)

// Scenarios are the injected regressions. Within is the target time to
// fire of Expect; zero means no target (the row reports what fired).
var Scenarios = []Scenario{
	{Name: "TTFT ×1.2", TTFTFactor: 1.2},
	{Name: "TTFT ×1.5", TTFTFactor: 1.5, Expect: "ServingprobeTTFTRegression", Within: 15 * time.Minute},
	{Name: "TTFT ×2", TTFTFactor: 2, Expect: "ServingprobeTTFTRegression", Within: 10 * time.Minute},
	{Name: "TTFT ×3 (p99 under the SLO threshold)", TTFTFactor: 3, Expect: "ServingprobeTTFTRegression"},
	{Name: "TTFT ×10 (above the SLO threshold)", TTFTFactor: 10, Expect: "ServingprobeTTFTErrorBudgetBurnFast", Within: 5 * time.Minute},
	{Name: "ITL and TPOT ×1.5", ITLFactor: 1.5, Expect: "ServingprobeITLRegression"},
	{Name: "ITL and TPOT ×2", ITLFactor: 2, Expect: "ServingprobeITLRegression"},
	{Name: "5% of probes fail", FailRatio: 0.05},
	{Name: "20% of probes fail", FailRatio: 0.2, Expect: "ServingprobeAvailabilityErrorBudgetBurnFast", Within: 10 * time.Minute},
	{Name: "100% of probes fail", FailRatio: 1, Expect: "ServingprobeTargetDown", Within: 3 * time.Minute},
	{Name: "one target of three down", FailRatio: 1, OtherTargets: 2, Expect: "ServingprobeTargetDown", Within: 3 * time.Minute},
	// The signals beside latency: wrong answers from one replica of four,
	// a prefix cache that stopped serving conversations, and traffic that
	// grew to within 10% of the capacity.
	{Name: "a quarter of answers fail a check", CheckFailRatio: 0.25, Expect: "ServingprobeAnswerChecksFailing", Within: 20 * time.Minute},
	{Name: "prefix cache lost", CacheLost: true, Expect: "ServingprobeWarmTurnsNotFaster", Within: 30 * time.Minute},
	{Name: "traffic at 90% of capacity", LoadRatio: 0.9, Expect: "ServingprobeCapacityHeadroomLow", Within: 20 * time.Minute},
}

// Options are the harness's knobs.
type Options struct {
	Seeds         int           // healthy series, each of HealthyDays
	ScenarioSeeds int           // runs of each scenario
	HealthyDays   int           // measured healthy days per seed
	Warmup        time.Duration // healthy history before measuring false alerts
	// ScenarioWarmup is the healthy history before a scenario's injection:
	// a day and an hour give the regression baseline one of its lags.
	ScenarioWarmup time.Duration
	Observe        time.Duration // how long after the injection to watch
	Scrape, Eval   time.Duration
	Jobs           int
	Scenarios      []Scenario
	// Native writes the latency histograms as native histograms only (a
	// Prometheus 3 with scrape_native_histograms); promtool 2.42 cannot read
	// them, so it needs a promtool from Prometheus 2.50 or later.
	Native bool
	// AllRules evaluates every recording rule, not only those the alerts
	// read: slower, and a check that leaving the others out changes nothing.
	AllRules bool
	// Progress, if set, gets a line as each run finishes or fails, so that
	// a long measurement shows how far it got and a failure is seen before
	// the others finish.
	Progress io.Writer
}

// DefaultOptions measure four healthy weeks (four seeds of seven days, each
// after three days of warm-up) and every scenario in two seeds: `make
// alerts`. promtool's cost is about linear in simulated days times targets,
// about 20 CPU-seconds per target-day with the alerts' rules, so this is
// about 40 target-days of healthy series and 30 of scenarios, some 25
// CPU-minutes: half an hour on two idle cores, hours on busy ones.
func DefaultOptions() Options {
	return Options{
		Seeds: 4, ScenarioSeeds: 2, HealthyDays: 7, Warmup: 3 * 24 * time.Hour, ScenarioWarmup: 25 * time.Hour, Observe: 45 * time.Minute,
		Scrape: 30 * time.Second, Eval: time.Minute, Jobs: 2, Scenarios: Scenarios,
	}
}

// ShortOptions is a run for CI: one seed, three scenarios, no healthy weeks.
func ShortOptions() Options {
	o := DefaultOptions()
	o.ScenarioSeeds, o.ScenarioWarmup, o.Observe = 1, 26*time.Hour, 40*time.Minute
	o.HealthyDays = 0
	o.Scenarios = []Scenario{Scenarios[2], Scenarios[8], Scenarios[9]}
	return o
}

// Result is what the harness measured.
type Result struct {
	Options Options
	// Fire[scenario][alert] lists the time to fire of each seed in which
	// the alert fired; Seeds how many seeds ran.
	Fire map[string]map[string][]time.Duration
	// Wrong lists, per scenario, alerts that named a target the scenario
	// left healthy.
	Wrong map[string][]string
	// False[alert] counts firings on the healthy series; Weeks is how many
	// weeks were measured.
	False map[string]int
	Weeks float64
}

type job struct {
	run  Run
	from time.Duration
}

// Measure runs every job of o against the rule files.
// groupOrder names every rule group in the order promtool evaluates them.
func Measure(ctx context.Context, promtool string, ruleFiles, groupOrder []string, m Model, o Options) (*Result, error) {
	dir, err := os.MkdirTemp("", "alertharness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var jobs []job
	for seed := 1; seed <= o.Seeds && o.HealthyDays > 0; seed++ {
		span := o.Warmup + time.Duration(o.HealthyDays)*24*time.Hour
		jobs = append(jobs, job{Run{Seed: uint64(seed), Span: span, Scrape: o.Scrape, Native: o.Native}, o.Warmup})
	}
	for seed := 1; seed <= o.ScenarioSeeds; seed++ {
		for i := range o.Scenarios {
			// The model draws the phase of its daily cycle from the seed,
			// so a fixed injection time falls at a random time of day. A
			// scenario's seed is its place in Scenarios, so that choosing
			// scenarios (-scenario) keeps their series.
			at := o.ScenarioWarmup
			k := slices.IndexFunc(Scenarios, func(sc Scenario) bool { return sc.Name == o.Scenarios[i].Name })
			if k < 0 {
				k = i
			}
			jobs = append(jobs, job{Run{Seed: uint64(seed)*100 + uint64(k), Span: at + o.Observe, Scrape: o.Scrape,
				Scenario: &o.Scenarios[i], ScenarioAt: at, Native: o.Native}, at})
		}
	}
	// The longest runs start first, so that the last one to finish is a
	// short one and the cores stay busy to the end.
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].run.cost() > jobs[b].run.cost() })
	res := &Result{Options: o, Fire: map[string]map[string][]time.Duration{}, Wrong: map[string][]string{}, False: map[string]int{}}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, max(o.Jobs, 1))
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for i, j := range jobs {
		// Taken here, not in the goroutine, so that runs start in order.
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fs, err := evaluate(ctx, promtool, dir, ruleFiles, groupOrder, m, j.run, o.Eval, j.from)
			mu.Lock()
			defer mu.Unlock()
			name := "healthy"
			if j.run.Scenario != nil {
				name = j.run.Scenario.Name
			}
			if err != nil {
				// One failed run spoils the table: stop the others.
				errs = append(errs, fmt.Errorf("%s (seed %d): %w", name, j.run.Seed, err))
				cancel()
				return
			}
			res.add(j, fs)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "run %d of %d done after %s: %s, seed %d, %s\n", i+1, len(jobs), time.Since(start).Round(time.Second), name, j.run.Seed, j.run.Span)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	res.Weeks = float64(o.Seeds*o.HealthyDays) / 7
	return res, nil
}

func (res *Result) add(j job, fs []Firing) {
	if j.run.Scenario == nil {
		for _, f := range fs {
			res.False[f.Labels["alertname"]] += int(f.Value)
		}
		return
	}
	name := j.run.Scenario.Name
	if res.Fire[name] == nil {
		res.Fire[name] = map[string][]time.Duration{}
	}
	first := map[string]time.Duration{}
	for _, f := range fs {
		a := f.Labels["alertname"]
		if t := f.Labels["target"]; t != "" && t != "t0" {
			res.Wrong[name] = append(res.Wrong[name], a+" on "+t)
			continue
		}
		d := time.Duration(f.Value*float64(time.Second)) - j.run.ScenarioAt
		if old, ok := first[a]; !ok || d < old {
			first[a] = d
		}
	}
	for a, d := range first {
		res.Fire[name][a] = append(res.Fire[name][a], d)
	}
}

func fmtMin(d time.Duration) string {
	if d < 0 {
		return "before"
	}
	return fmt.Sprintf("%.1f", d.Minutes())
}

// Table writes the result as Markdown.
func (res *Result) Table(w io.Writer, severities map[string]string) {
	o := res.Options
	if len(o.Scenarios) > 0 {
		res.fireTable(w, severities)
	}
	if res.Weeks == 0 {
		return
	}
	if len(o.Scenarios) > 0 {
		fmt.Fprintln(w)
	}
	res.falseTable(w, severities)
}

func (res *Result) fireTable(w io.Writer, severities map[string]string) {
	o := res.Options
	fmt.Fprintf(w, "Time to fire in minutes after the injection (median and worst of %d seeds; scrape every %s, rules evaluated every %s, "+
		"probes every %s; alerts that never fired within %s are left out):\n\n",
		o.ScenarioSeeds, o.Scrape, o.Eval, DefaultModel().ProbeInterval, o.Observe)
	if o.Native {
		fmt.Fprint(w, "Native histograms only (no classic buckets).\n\n")
	}
	fmt.Fprintln(w, "| scenario | alert | fired in | median | worst | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, sc := range o.Scenarios {
		fired := res.Fire[sc.Name]
		names := make([]string, 0, len(fired))
		for a := range fired {
			names = append(names, a)
		}
		sort.Slice(names, func(i, j int) bool {
			if (names[i] == sc.Expect) != (names[j] == sc.Expect) {
				return names[i] == sc.Expect
			}
			return slices.Min(fired[names[i]]) < slices.Min(fired[names[j]]) || (slices.Min(fired[names[i]]) == slices.Min(fired[names[j]]) && names[i] < names[j])
		})
		if sc.Expect != "" && len(fired[sc.Expect]) == 0 {
			names = append([]string{sc.Expect}, names...)
		}
		if len(names) == 0 {
			fmt.Fprintf(w, "| %s | none | | | | | |\n", sc.Name)
		}
		for _, a := range names {
			ds := slices.Clone(fired[a])
			slices.Sort(ds)
			target, met, med, worst := "", "", "—", "—"
			if len(ds) > 0 {
				med, worst = fmtMin(ds[(len(ds)-1)/2]), fmtMin(ds[len(ds)-1])
			}
			if a == sc.Expect && sc.Within > 0 {
				target = fmt.Sprintf("≤ %.0f", sc.Within.Minutes())
				met = "yes"
				if len(ds) < o.ScenarioSeeds || ds[len(ds)-1] > sc.Within {
					met = "**no**"
				}
			}
			fmt.Fprintf(w, "| %s | %s (%s) | %d/%d | %s | %s | %s | %s |\n", sc.Name, a, severities[a], len(ds), o.ScenarioSeeds, med, worst, target, met)
		}
		for _, wr := range res.Wrong[sc.Name] {
			fmt.Fprintf(w, "| %s | **%s (healthy target)** | | | | | **no** |\n", sc.Name, wr)
		}
	}
}

func (res *Result) falseTable(w io.Writer, severities map[string]string) {
	o := res.Options
	fmt.Fprintf(w, "False alerts on the healthy series: firings per simulated week, over %.2g weeks (%d seeds of %d days), after %s of warm-up:\n\n",
		res.Weeks, o.Seeds, o.HealthyDays, o.Warmup)
	fmt.Fprintln(w, "| alert | severity | firings | per week | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	names := make([]string, 0, len(severities))
	for a := range severities {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		n := res.False[a]
		target, met := "≤ 1", "yes"
		if severities[a] == "critical" {
			target = "0"
		}
		if (severities[a] == "critical" && n > 0) || float64(n)/res.Weeks > 1 {
			met = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.2f | %s | %s |\n", a, severities[a], n, float64(n)/res.Weeks, target, met)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("alertharness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	knobs := fs.String("config", "", "YAML file of mixin knobs to render the rules from (default: the shipped knobs)")
	short := fs.Bool("short", false, "a quick run: one seed, three scenarios, no healthy weeks")
	seeds := fs.Int("seeds", 0, "healthy series (0: the default, 4)")
	scSeeds := fs.Int("scenario-seeds", 0, "runs of each scenario (0: the default, 2)")
	days := fs.Int("healthy-days", -1, "measured days of each healthy series (-1: the default, 7)")
	warmup := fs.Duration("warmup", 0, "healthy history before the measured days (0: the default, 72h)")
	observe := fs.Duration("observe", 0, "how long to watch after an injection (0: the default, 45m)")
	jobs := fs.Int("j", 2, "promtool processes at once")
	probe := fs.Duration("probe-interval", DefaultModel().ProbeInterval, "the model's probe interval")
	promtool := fs.String("promtool", "promtool", "promtool binary")
	native := fs.Bool("native", false, "native histograms only, as Prometheus 3 with scrape_native_histograms stores them (needs a promtool of Prometheus 2.50 or later)")
	allRules := fs.Bool("all-rules", false, "evaluate every recording rule, not only those the alerts read (a check; slower)")
	scenario := fs.String("scenario", "", "only the scenarios whose name matches this regular expression")
	only := fs.String("only", "", `"healthy" to measure only the false alerts, "scenarios" only the times to fire`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := mixin.Default()
	if *knobs != "" {
		var err error
		if cfg, err = mixin.Load(*knobs); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	o := DefaultOptions()
	if *short {
		o = ShortOptions()
	}
	if *seeds > 0 {
		o.Seeds = *seeds
	}
	if *scSeeds > 0 {
		o.ScenarioSeeds = *scSeeds
	}
	if *days >= 0 {
		o.HealthyDays = *days
	}
	if *warmup > 0 {
		o.Warmup = *warmup
	}
	if *observe > 0 {
		o.Observe = *observe
	}
	o.Jobs = *jobs
	switch *only {
	case "":
	case "healthy":
		o.Scenarios = nil
	case "scenarios":
		o.HealthyDays = 0
	default:
		fmt.Fprintf(stderr, "-only %q: want healthy or scenarios\n", *only)
		return 2
	}
	o.Progress = stderr
	o.Native = *native
	o.AllRules = *allRules
	if *scenario != "" {
		re, err := regexp.Compile(*scenario)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		o.Scenarios = slices.DeleteFunc(slices.Clone(o.Scenarios), func(sc Scenario) bool { return !re.MatchString(sc.Name) })
	}
	m := DefaultModel()
	m.ProbeInterval = *probe
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// promtool runs in a temporary directory, so a relative path (as in
	// make alerts-native's .build/promtool) is resolved here, once.
	pt, err := exec.LookPath(*promtool)
	if err == nil {
		pt, err = filepath.Abs(pt)
	}
	if err != nil {
		fmt.Fprintf(stderr, "-promtool: %v\n", err)
		return 1
	}
	res, sev, err := measureConfig(ctx, pt, cfg, m, o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	res.Table(stdout, sev)
	return 0
}

// measureConfig renders cfg's rule files into a temporary directory and
// measures them; it also returns each alert's severity.
func measureConfig(ctx context.Context, promtool string, cfg mixin.Config, m Model, o Options) (*Result, map[string]string, error) {
	if _, err := exec.LookPath(promtool); err != nil {
		return nil, nil, fmt.Errorf("promtool not found (Debian's prometheus package; make deps installs it): %w", err)
	}
	files, err := mixin.Files(cfg)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "alertharness-rules-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	recording, err := alertingRecords(cfg)
	if err != nil {
		return nil, nil, err
	}
	if o.AllRules {
		recording = files["rules.yaml"]
	}
	var ruleFiles []string
	for _, f := range []struct {
		name string
		b    []byte
	}{{"rules.yaml", recording}, {"alerts.yaml", files["alerts.yaml"]}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.b, 0o644); err != nil {
			return nil, nil, err
		}
		ruleFiles = append(ruleFiles, p)
	}
	// promtool evaluates the groups of a test in group_eval_order, and
	// without one in the order of a Go map: a different order in each run,
	// which moved times to fire by a minute between runs. A real Prometheus
	// evaluates each group at its own phase within the interval; the
	// alerts go first here, so that every alert reads records one
	// evaluation old, the latest a real Prometheus can read them.
	var order []string
	for _, g := range cfg.Alerts().Groups {
		order = append(order, g.Name)
	}
	for _, g := range cfg.Rules().Groups {
		order = append(order, g.Name)
	}
	sev := map[string]string{}
	for _, g := range cfg.Alerts().Groups {
		for _, r := range g.Rules {
			for _, l := range r.Labels {
				if l.Key == "severity" {
					sev[r.Alert] = fmt.Sprint(l.Value)
				}
			}
		}
	}
	res, err := Measure(ctx, promtool, ruleFiles, order, m, o)
	return res, sev, err
}

var (
	recordRE   = regexp.MustCompile(`(target:[a-zA-Z0-9_]+:[a-zA-Z0-9_:]+)(\{[^}]*\})?`)
	quantileRE = regexp.MustCompile(`quantile(=~|=)"([^"]*)"`)
)

// reads says which recorded series expr reads: per record name, the
// quantile label values its selectors accept (nil: any).
type reads map[string][]*regexp.Regexp

func (rd reads) add(expr string) (grew bool) {
	for _, m := range recordRE.FindAllStringSubmatch(expr, -1) {
		name, old := m[1], rd[m[1]]
		q := quantileRE.FindStringSubmatch(m[2])
		if _, ok := rd[name]; ok && old == nil {
			continue // already any quantile
		}
		if q == nil {
			rd[name] = nil
			grew = true
			continue
		}
		re := "^" + regexp.QuoteMeta(q[2]) + "$"
		if q[1] == "=~" {
			re = "^(?:" + q[2] + ")$"
		}
		if !slices.ContainsFunc(old, func(o *regexp.Regexp) bool { return o.String() == re }) {
			rd[name] = append(old, regexp.MustCompile(re))
			grew = true
		}
	}
	return grew
}

// keeps reports whether a rule recording name with the given quantile
// label ("" for none) records a series some selector reads.
func (rd reads) keeps(name, quantile string) bool {
	res, ok := rd[name]
	if !ok {
		return false
	}
	if res == nil || quantile == "" {
		return true
	}
	return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(quantile) })
}

// alertingRecords renders cfg's recording rules keeping only those whose
// series the alerts read, directly or through another recorded series. The
// rest (the dashboards' quantiles) cannot change when or whether an alert
// fires, since a rule sees other rules only through the series they record;
// they are a third of promtool's work over weeks of series.
func alertingRecords(cfg mixin.Config) ([]byte, error) {
	rd := reads{}
	for _, g := range cfg.Alerts().Groups {
		for _, r := range g.Rules {
			rd.add(r.Expr)
		}
	}
	rf := cfg.Rules()
	// A record may read one recorded later in the file, so repeat until
	// nothing new is read.
	for grew := true; grew; {
		grew = false
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if rd.keeps(r.Record, quantileLabel(r.Labels)) && rd.add(r.Expr) {
					grew = true
				}
			}
		}
	}
	for i := range rf.Groups {
		kept := rf.Groups[i].Rules[:0]
		for _, r := range rf.Groups[i].Rules {
			if rd.keeps(r.Record, quantileLabel(r.Labels)) {
				kept = append(kept, r)
			}
		}
		rf.Groups[i].Rules = kept
	}
	return yaml.Marshal(rf)
}

func quantileLabel(ls yaml.MapSlice) string {
	for _, l := range ls {
		if l.Key == "quantile" {
			return fmt.Sprint(l.Value)
		}
	}
	return ""
}
