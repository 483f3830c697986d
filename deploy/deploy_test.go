package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/testkit/external"
)

// doc is one decoded manifest or file, navigated with get.
type doc = map[string]any

func readYAML(t *testing.T, name string) doc {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var d doc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: want exactly one YAML document", name)
	}
	return d
}

// get follows a path of map keys and list indexes; it returns nil when any
// step is missing.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(doc)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, keys ...any) string { s, _ := get(v, keys...).(string); return s }

func list(v any, keys ...any) []any { l, _ := get(v, keys...).([]any); return l }

func labelsMatch(selector, labels any) bool {
	sel, _ := selector.(doc)
	lab, _ := labels.(doc)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if lab[k] != v {
			return false
		}
	}
	return true
}

func parseConfig(t *testing.T, name string, b []byte) *config.Config {
	t.Helper()
	c, err := config.Parse(b)
	if err != nil {
		t.Fatalf("%s does not pass config.Parse:\n%v", name, err)
	}
	return c
}

// TestShippedConfigs loads every servingprobe config that deploy files ship.
func TestShippedConfigs(t *testing.T) {
	for _, name := range []string{"servingprobe.yml", "../examples/compose/servingprobe.yml"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			parseConfig(t, name, b)
		})
	}
}

type manifests struct {
	byKind map[string]doc
	files  []string
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{byKind: map[string]doc{}}
	for _, f := range files {
		d := readYAML(t, f)
		kind := str(d, "kind")
		m.files = append(m.files, filepath.Base(f))
		if strings.HasPrefix(filepath.Base(f), "bench-") {
			// A bench run's Jobs, not the daemon's wiring.
			continue
		}
		if _, dup := m.byKind[kind]; dup {
			t.Fatalf("%s: a second %s; the wiring test expects one of each kind", f, kind)
		}
		m.byKind[kind] = d
	}
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "Secret", "ServiceMonitor", "Probe", "PrometheusRule", "NetworkPolicy", "Kustomization"} {
		if m.byKind[k] == nil {
			t.Fatalf("deploy/kubernetes has no %s", k)
		}
	}
	return m
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	m := loadManifests(t)
	var listed []string
	for _, r := range list(m.byKind["Kustomization"], "resources") {
		listed = append(listed, r.(string))
	}
	for _, f := range m.files {
		// secret.yaml is an example; applying it would overwrite a real key.
		// bench-*.yaml are a one-off run, applied step by step.
		want := f != "kustomization.yaml" && f != "secret.yaml" && !strings.HasPrefix(f, "bench-")
		if got := slices.Contains(listed, f); got != want {
			t.Errorf("kustomization.yaml lists %s: %v, want %v", f, got, want)
		}
	}
	for _, r := range listed {
		if !slices.Contains(m.files, r) {
			t.Errorf("kustomization.yaml lists %s, which does not exist", r)
		}
	}
}

// TestKubernetesWiring checks what schemas cannot: that the manifests agree
// with each other, with the image and with the rules.
func TestKubernetesWiring(t *testing.T) {
	m := loadManifests(t)
	dep, svc, cm, sec := m.byKind["Deployment"], m.byKind["Service"], m.byKind["ConfigMap"], m.byKind["Secret"]
	pod := get(dep, "spec", "template")
	podLabels := get(pod, "metadata", "labels")
	ctr := get(pod, "spec", "containers", 0)

	if !labelsMatch(get(dep, "spec", "selector", "matchLabels"), podLabels) {
		t.Error("Deployment selector does not match its pod template labels")
	}
	if !labelsMatch(get(svc, "spec", "selector"), podLabels) {
		t.Error("Service selector does not match the pod labels")
	}
	if !labelsMatch(get(m.byKind["ServiceMonitor"], "spec", "selector", "matchLabels"), get(svc, "metadata", "labels")) {
		t.Error("ServiceMonitor selector does not match the Service labels")
	}
	if !labelsMatch(get(m.byKind["NetworkPolicy"], "spec", "podSelector", "matchLabels"), podLabels) {
		t.Error("NetworkPolicy podSelector does not match the pod labels")
	}

	// Ports: 9775 named http, and everything refers to that name.
	if str(ctr, "ports", 0, "name") != "http" || get(ctr, "ports", 0, "containerPort") != 9775 {
		t.Errorf("container port = %v, want http/9775", get(ctr, "ports", 0))
	}
	if str(svc, "spec", "ports", 0, "targetPort") != "http" || str(svc, "spec", "ports", 0, "name") != "http" {
		t.Error("Service port must be named http and target the container port http")
	}
	if str(m.byKind["ServiceMonitor"], "spec", "endpoints", 0, "port") != "http" {
		t.Error("ServiceMonitor endpoint must use the Service port http")
	}
	if str(m.byKind["NetworkPolicy"], "spec", "ingress", 0, "ports", 0, "port") != "http" {
		t.Error("NetworkPolicy must limit the http port")
	}

	// The rules select the scrape job by name; a ServiceMonitor's job is the Service name.
	rules, err := os.ReadFile("kubernetes/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jobs := regexp.MustCompile(`job="([^"]+)"`).FindAllStringSubmatch(string(rules), -1)
	if len(jobs) == 0 {
		t.Error("the rules select no job; update this test if that is deliberate")
	}
	for _, j := range jobs {
		if strings.HasPrefix(j[1], "%[") {
			// A printf verb inside an alert's description template: the
			// query it builds takes the job from the firing alert's own
			// labels, which the rules' job selector set.
			continue
		}
		if j[1] != str(svc, "metadata", "name") {
			t.Errorf("rules select job=%q but the Service (so the ServiceMonitor job) is %q", j[1], str(svc, "metadata", "name"))
			break
		}
	}

	// Health checks and hardening.
	for probe, want := range map[string]string{"livenessProbe": "/-/healthy", "readinessProbe": "/-/ready"} {
		if got := str(ctr, probe, "httpGet", "path"); got != want {
			t.Errorf("%s path = %q, want %q", probe, got, want)
		}
		if str(ctr, probe, "httpGet", "port") != "http" {
			t.Errorf("%s must use port http", probe)
		}
	}
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"spec", "securityContext", "runAsNonRoot"}, true},
		{[]any{"spec", "securityContext", "runAsUser"}, 65534},
		{[]any{"spec", "securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
		{[]any{"spec", "automountServiceAccountToken"}, false},
		{[]any{"spec", "containers", 0, "securityContext", "readOnlyRootFilesystem"}, true},
		{[]any{"spec", "containers", 0, "securityContext", "allowPrivilegeEscalation"}, false},
		{[]any{"spec", "containers", 0, "securityContext", "capabilities", "drop", 0}, "ALL"},
	}
	for _, c := range checks {
		if got := get(pod, c.path...); got != c.want {
			t.Errorf("pod %v = %v, want %v", c.path, got, c.want)
		}
	}
	for _, r := range []string{"requests", "limits"} {
		if get(ctr, "resources", r, "memory") == nil {
			t.Errorf("container has no memory %s", r)
		}
	}

	// Mounts: config file from the ConfigMap, credentials from the Secret,
	// results on a writable volume (the root filesystem is read-only).
	mounts := map[string]string{} // mountPath -> volume name
	for _, vm := range list(ctr, "volumeMounts") {
		mounts[str(vm, "mountPath")] = str(vm, "name")
		if get(vm, "subPath") != nil {
			t.Errorf("volumeMount %s uses subPath, which never sees ConfigMap or Secret updates", str(vm, "mountPath"))
		}
	}
	volumes := map[string]doc{}
	for _, v := range list(pod, "spec", "volumes") {
		volumes[str(v, "name")] = v.(doc)
	}
	volumeAt := func(file string) (doc, string) {
		best := ""
		for mp := range mounts {
			if (file == mp || strings.HasPrefix(file, mp+"/")) && len(mp) > len(best) {
				best = mp
			}
		}
		if best == "" {
			return nil, ""
		}
		return volumes[mounts[best]], strings.TrimPrefix(strings.TrimPrefix(file, best), "/")
	}
	var configPath string
	for _, a := range list(ctr, "args") {
		if p, ok := strings.CutPrefix(a.(string), "--config.file="); ok {
			configPath = p
		}
	}
	vol, key := volumeAt(configPath)
	if str(vol, "configMap", "name") != str(cm, "metadata", "name") {
		t.Fatalf("--config.file=%s is not in a volume of ConfigMap %s", configPath, str(cm, "metadata", "name"))
	}
	cfgText := str(cm, "data", key)
	if cfgText == "" {
		t.Fatalf("ConfigMap has no key %q for --config.file=%s", key, configPath)
	}
	cfg := parseConfig(t, "ConfigMap data "+key, []byte(cfgText))

	// Credentials: only *_file references into the Secret volume.
	if regexp.MustCompile(`(?m)^\s*(password|credentials|bearer_token|client_secret):`).MatchString(cfgText) {
		t.Error("ConfigMap config holds a secret in clear; use *_file pointing into the Secret mount")
	}
	fileRefs := regexp.MustCompile(`(?m)^\s*(?:credentials_file|password_file|bearer_token_file|client_secret_file):\s*(\S+)`).FindAllStringSubmatch(cfgText, -1)
	if len(fileRefs) == 0 {
		t.Error("the ConfigMap config shows no credentials_file example")
	}
	for _, ref := range fileRefs {
		vol, key := volumeAt(ref[1])
		if str(vol, "secret", "secretName") != str(sec, "metadata", "name") {
			t.Errorf("%s is not in a volume of Secret %s", ref[1], str(sec, "metadata", "name"))
		} else if get(sec, "stringData", key) == nil && get(sec, "data", key) == nil {
			t.Errorf("%s: Secret %s has no key %q", ref[1], str(sec, "metadata", "name"), key)
		}
	}
	if vol, _ := volumeAt(cfg.Bench.ResultsDir); vol == nil || vol["emptyDir"] == nil && vol["persistentVolumeClaim"] == nil {
		t.Errorf("bench.results_dir %s is not on a writable volume (the root filesystem is read-only)", cfg.Bench.ResultsDir)
	}

	// The Probe resource names configured targets and a module they run.
	p := m.byKind["Probe"]
	if str(p, "spec", "prober", "path") != "/probe" {
		t.Errorf("Probe prober.path = %q, want /probe", str(p, "spec", "prober", "path"))
	}
	if !strings.HasPrefix(str(p, "spec", "prober", "url"), str(svc, "metadata", "name")+".") || !strings.HasSuffix(str(p, "spec", "prober", "url"), ":9775") {
		t.Errorf("Probe prober.url = %q, want the Service %s on 9775", str(p, "spec", "prober", "url"), str(svc, "metadata", "name"))
	}
	if str(p, "spec", "jobName") == str(svc, "metadata", "name") {
		t.Error("the Probe's job must differ from the ServiceMonitor's, or the rules count probes twice")
	}
	module := str(p, "spec", "module")
	static := list(p, "spec", "targets", "staticConfig", "static")
	if len(static) == 0 {
		t.Error("Probe has no static targets")
	}
	for _, name := range static {
		tg, ok := cfg.Target(name.(string))
		if !ok {
			t.Errorf("Probe target %q is not a configured target", name)
		} else if !slices.Contains(tg.Modules, module) {
			t.Errorf("Probe module %q is not a module of target %q (%v)", module, name, tg.Modules)
		}
	}
}

// TestImageMatchesDefaults ties the Dockerfile to the default config it ships.
func TestImageMatchesDefaults(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{
		"COPY deploy/servingprobe.yml /etc/servingprobe/servingprobe.yml\n",
		`CMD ["serve", "--config.file=/etc/servingprobe/servingprobe.yml"]`,
		"USER 65534:65534\n",
		"EXPOSE 9775\n",
		`ENTRYPOINT ["/bin/servingprobe"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	cfgBytes, err := os.ReadFile("servingprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, "deploy/servingprobe.yml", cfgBytes)
	if !strings.Contains(df, fmt.Sprintf("VOLUME [%q]", cfg.Bench.ResultsDir)) {
		t.Errorf("bench.results_dir %s of the image's config is not the image's VOLUME", cfg.Bench.ResultsDir)
	}
}

// composeMounts returns the bind mounts of a service as host path (relative
// to the compose file) -> container path.
func composeMounts(t *testing.T, svc any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range list(svc, "volumes") {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("long-form volume %v: extend the test", v)
		}
		parts := strings.Split(s, ":")
		if len(parts) < 2 {
			t.Fatalf("volume %q without a container path", s)
		}
		if strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/") {
			out[parts[0]] = parts[1]
		}
	}
	return out
}

func TestCompose(t *testing.T) {
	const dir = "../examples/compose"
	c := readYAML(t, filepath.Join(dir, "compose.yaml"))
	services, _ := get(c, "services").(doc)
	for _, want := range []string{"simulator", "servingprobe", "prometheus", "grafana"} {
		if services[want] == nil {
			t.Fatalf("compose.yaml has no %s service", want)
		}
	}
	named, _ := get(c, "volumes").(doc)
	for name, svc := range services {
		for _, v := range list(svc, "volumes") {
			src := strings.Split(v.(string), ":")[0]
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				if _, ok := named[src]; !ok {
					t.Errorf("service %s uses volume %q, which is not declared", name, src)
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("service %s mounts %s: %v", name, src, err)
			}
		}
		for _, d := range list(svc, "depends_on") {
			if services[d.(string)] == nil {
				t.Errorf("service %s depends on unknown service %v", name, d)
			}
		}
	}

	// servingprobe: the config it mounts is valid and probes the simulator.
	spMounts := composeMounts(t, services["servingprobe"])
	var cfgPath string
	for _, a := range list(services["servingprobe"], "command") {
		if p, ok := strings.CutPrefix(a.(string), "--config.file="); ok {
			cfgPath = p
		}
	}
	var hostCfg string
	for h, ctrPath := range spMounts {
		if ctrPath == cfgPath {
			hostCfg = h
		}
	}
	if hostCfg == "" {
		t.Fatalf("servingprobe's --config.file=%s is not mounted", cfgPath)
	}
	b, err := os.ReadFile(filepath.Join(dir, hostCfg))
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, hostCfg, b)
	simAddr := ""
	for _, a := range list(services["simulator"], "command") {
		if p, ok := strings.CutPrefix(a.(string), "--web.listen-address="); ok {
			simAddr = p
		}
	}
	_, simPort, _ := strings.Cut(simAddr, ":")
	if len(cfg.Targets) == 0 || cfg.Targets[0].URL != "http://simulator:"+simPort {
		t.Errorf("compose servingprobe config should probe http://simulator:%s (simulate --web.listen-address=%s)", simPort, simAddr)
	}

	// Prometheus: promtool accepts its config with the rule files exactly
	// where compose mounts them.
	promtool := external.Program(t, "promtool")
	promMounts := composeMounts(t, services["prometheus"])
	var promCfgHost string
	for h, ctrPath := range promMounts {
		if ctrPath == "/etc/prometheus/prometheus.yml" {
			promCfgHost = h
		}
	}
	promCfg, err := os.ReadFile(filepath.Join(dir, promCfgHost))
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(promCfg, &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.RuleFiles) != 2 {
		t.Errorf("prometheus.yml loads %d rule files, want rules.yaml and alerts.yaml", len(pc.RuleFiles))
	}
	tmp := t.TempDir()
	rewritten := string(promCfg)
	for _, rf := range pc.RuleFiles {
		host := ""
		for h, ctrPath := range promMounts {
			if ctrPath == rf {
				host = h
			}
		}
		if host == "" {
			t.Errorf("rule file %s is not mounted into the prometheus service", rf)
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, host))
		if err != nil {
			t.Fatal(err)
		}
		rewritten = strings.ReplaceAll(rewritten, rf, abs)
	}
	scraped := false
	for _, sc := range pc.ScrapeConfigs {
		if sc.JobName == "servingprobe" && len(sc.StaticConfigs) > 0 && slices.Contains(sc.StaticConfigs[0].Targets, "servingprobe:9775") {
			scraped = true
		}
	}
	if !scraped {
		t.Error(`prometheus.yml must scrape servingprobe:9775 as job "servingprobe" (the rules select that job)`)
	}
	f := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(f, []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check config (rule files resolved through the compose mounts): %v\n%s", err, out)
	}

	// Grafana: the dashboards provider reads the directory compose mounts
	// the dashboards into, and that directory holds every dashboard.
	gMounts := composeMounts(t, services["grafana"])
	prov := readYAML(t, filepath.Join(dir, "grafana/provisioning/dashboards/servingprobe.yaml"))
	want := str(prov, "providers", 0, "options", "path")
	found := false
	for h, ctrPath := range gMounts {
		if ctrPath == want {
			found = true
			for _, name := range []string{"overview.json", "bench.json", "client-vs-server.json"} {
				if _, err := os.Stat(filepath.Join(dir, h, name)); err != nil {
					t.Errorf("grafana dashboards mount %s: %v", h, err)
				}
			}
		}
	}
	if !found {
		t.Errorf("the dashboard provider reads %s, which compose does not mount", want)
	}
	for h, ctrPath := range gMounts {
		if path.Base(ctrPath) == "datasources" {
			ds := readYAML(t, filepath.Join(dir, h, "prometheus.yaml"))
			if got := str(ds, "datasources", 0, "url"); got != "http://prometheus:9090" {
				t.Errorf("datasource url = %q, want http://prometheus:9090", got)
			}
		}
	}
}

// hubCacheProblems says why a pod template's servingprobe containers could
// not fetch a tokenizer from the Hugging Face hub. bench (a --model hub id)
// and the daemon (a target's model or tokenizer) fetch one into $HF_HOME
// when the server does not name it at /model_info; the image's user has no
// home (/nonexistent) and the manifests make the root read-only, so HF_HOME
// must be set and lie on a writable volume. merge reads no tokenizer.
func hubCacheProblems(pod any) []string {
	var problems []string
	volumes := map[string]any{}
	for _, v := range list(pod, "spec", "volumes") {
		volumes[str(v, "name")] = v
	}
	for _, c := range list(pod, "spec", "containers") {
		name := str(c, "name")
		args := list(c, "args")
		if len(args) > 0 && args[0] != "bench" && args[0] != "serve" {
			continue
		}
		home := ""
		for _, e := range list(c, "env") {
			if str(e, "name") == "HF_HOME" {
				home = str(e, "value")
			}
		}
		if !path.IsAbs(home) {
			problems = append(problems, fmt.Sprintf("container %s: HF_HOME is %q, want an absolute path on a writable volume", name, home))
			continue
		}
		var mount any
		for _, m := range list(c, "volumeMounts") {
			mp := str(m, "mountPath")
			if home == mp || strings.HasPrefix(home, strings.TrimSuffix(mp, "/")+"/") {
				mount = m
			}
		}
		if mount == nil {
			problems = append(problems, fmt.Sprintf("container %s: HF_HOME %s is on no volume mount (the root is read-only)", name, home))
			continue
		}
		v := volumes[str(mount, "name")]
		if ro, _ := get(mount, "readOnly").(bool); ro || (get(v, "emptyDir") == nil && get(v, "persistentVolumeClaim") == nil) {
			problems = append(problems, fmt.Sprintf("container %s: HF_HOME %s is on volume %q, which is not a writable emptyDir or claim", name, home, str(mount, "name")))
		}
	}
	return problems
}

// TestPodsCanCacheTheTokenizer: every pod that may fetch a tokenizer can
// write it, and the check itself fails on the pod as it was without HF_HOME.
func TestPodsCanCacheTheTokenizer(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pods := 0
	for _, f := range files {
		d := readYAML(t, f)
		pod := get(d, "spec", "template")
		if pod == nil {
			continue
		}
		pods++
		for _, p := range hubCacheProblems(pod) {
			t.Errorf("%s: %s", f, p)
		}
	}
	if pods < 3 {
		t.Fatalf("%d pod templates, want the Deployment and the two bench Jobs", pods)
	}

	job := readYAML(t, "kubernetes/bench-job.yaml")
	ctr := get(job, "spec", "template", "spec", "containers", 0).(doc)
	delete(ctr, "env")
	if len(hubCacheProblems(get(job, "spec", "template"))) == 0 {
		t.Error("a bench container without HF_HOME passes the check")
	}
	job = readYAML(t, "kubernetes/bench-job.yaml")
	ctr = get(job, "spec", "template", "spec", "containers", 0).(doc)
	ctr["env"] = []any{doc{"name": "HF_HOME", "value": "/etc/servingprobe-bench/start/hf"}}
	if len(hubCacheProblems(get(job, "spec", "template"))) == 0 {
		t.Error("HF_HOME on a read-only ConfigMap mount passes the check")
	}
}

// TestOneImageName: the Deployment and the bench Jobs name the same image,
// so that the one rename docs/daemon.md describes covers them all.
func TestOneImageName(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	images := map[string][]string{}
	for _, f := range files {
		d := readYAML(t, f)
		for _, c := range list(d, "spec", "template", "spec", "containers") {
			images[str(c, "image")] = append(images[str(c, "image")], filepath.Base(f))
		}
	}
	if len(images) != 1 {
		t.Errorf("the manifests name %d images, want one: %v", len(images), images)
	}
}
