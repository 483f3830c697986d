package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/simulator"
	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// apiFixture is a running binary with a simulator target, a stalling target
// and the hostile server, the bench API on and ad-hoc /probe allowed for
// two hostile paths only.
type apiFixture struct {
	p       *daemonProc
	hs      *hostile.Server
	sim     string
	cfgPath string
	results string
	targets []hostile.Target
	extra   string
}

const apiBearer = "apibearer-PLANTED-31337"

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	hs := hostile.NewServer()
	t.Cleanup(hs.Close)
	sim, stopSim, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSim)
	dir := t.TempDir()
	f := &apiFixture{hs: hs, sim: sim, cfgPath: filepath.Join(dir, "servingprobe.yml"), results: filepath.Join(dir, "results")}
	f.targets = []hostile.Target{
		{Name: "sim", URL: sim, Model: hostile.SimModel, Interval: 2 * time.Second, Timeout: 2 * time.Second,
			Extra: "    http_client_config:\n      authorization:\n        credentials: " + apiBearer + "\n"},
		{Name: "other", URL: sim, Model: hostile.SimModel, Interval: 2 * time.Second},
		{Name: "stall", URL: sim, Model: hostile.SimModel, SimFault: simulator.FaultStallBeforeHeaders, Interval: 10 * time.Second, Timeout: 3 * time.Second},
	}
	allow := hs.URL(hostile.EchoAuth) + "|" + hs.URL(hostile.RedirectAway)
	f.extra = fmt.Sprintf("bench:\n  results_dir: %q\n  max_body_bytes: 4096\n  max_prompts: 1000\n  max_request_rate: 50\n"+
		"  max_concurrency: 8\n  max_duration: 2m\n  max_concurrent_runs: 1\n"+
		"probe_api:\n  allow_adhoc_targets: true\n  adhoc_url_allowlist: [%q]\n", f.results, strings.ReplaceAll(allow, ".", `\.`))
	f.write(t, f.targets)
	// Planted files: a corrupt result, a symlink out of the directory, a
	// name that is not an id. The daemon must start and list none.
	if err := os.MkdirAll(f.results, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(f.results, "bench-0123456789abcdef01234567.jsonl"), []byte(`{"id":"0123456789abcdef0123`), 0o644)
	_ = os.Symlink("/etc/passwd", filepath.Join(f.results, "bench-89abcdef0123456789abcdef.jsonl"))
	_ = os.WriteFile(filepath.Join(f.results, "bench-..%2f..%2fetc.jsonl"), []byte("{}\n"), 0o644)
	f.p = startDaemon(t, f.cfgPath)
	t.Cleanup(func() {
		if f.p.cmd.ProcessState == nil {
			f.p.stop(t)
		}
	})
	return f
}

func (f *apiFixture) write(t *testing.T, targets []hostile.Target) {
	t.Helper()
	if err := os.WriteFile(f.cfgPath, []byte(hostile.ConfigWithTokenizer(targets, f.extra, testTokenizer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAdhocProbeIsOffByDefault(t *testing.T) {
	c, err := config.Parse([]byte(hostile.Config([]hostile.Target{{Name: "a", URL: "http://127.0.0.1:1"}}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Probe.AllowAdhocTargets {
		t.Error("probe_api.allow_adhoc_targets defaults to true, want false")
	}
}

func TestHostileAPIInput(t *testing.T) {
	f := newAPIFixture(t)
	p := f.p

	t.Run("planted_results_files_not_listed", func(t *testing.T) {
		_, body := do(t, "GET", p.url("/api/v1/benches"), "")
		if strings.Contains(body, `"id"`) {
			t.Errorf("GET /api/v1/benches lists planted files: %s", body)
		}
	})

	t.Run("bench_bodies", func(t *testing.T) {
		for _, tc := range []struct {
			name, body string
			want       int
		}{
			{"empty", ``, 400},
			{"not_json", `target=sim`, 400},
			{"truncated", `{"target":"sim"`, 400},
			{"array", `[{"target":"sim"}]`, 400},
			{"null", `null`, 400},
			{"unknown_field", `{"target":"sim","num_promtps":5}`, 400},
			{"trailing_data", `{"target":"sim"}{"target":"sim"}`, 400},
			{"wrong_type", `{"target":"sim","num_prompts":"5"}`, 400},
			{"oversized", `{"target":"sim","tag":"` + strings.Repeat("x", 5000) + `"}`, 422},
			{"no_target", `{}`, 400},
			{"unknown_target", `{"target":"nope"}`, 400},
			{"traversal_target", `{"target":"../../etc/passwd"}`, 400},
			{"file_dataset", `{"target":"sim","dataset_name":"sharegpt"}`, 400},
			{"negative_prompts", `{"target":"sim","num_prompts":-1}`, 400},
			{"zero_prompts", `{"target":"sim","num_prompts":0}`, 400},
			{"huge_prompts", `{"target":"sim","num_prompts":99999999999999999999}`, 400},
			{"float_prompts", `{"target":"sim","num_prompts":1e309}`, 400},
			{"prompts_over_limit", `{"target":"sim","num_prompts":1001}`, 422},
			{"nan_rate_literal", `{"target":"sim","request_rate":NaN}`, 400},
			{"nan_rate_string", `{"target":"sim","request_rate":"NaN"}`, 400},
			{"negative_rate", `{"target":"sim","request_rate":-1}`, 400},
			{"zero_rate", `{"target":"sim","request_rate":0}`, 400},
			{"huge_rate", `{"target":"sim","request_rate":1e308}`, 422},
			{"inf_rate_over_limit", `{"target":"sim","request_rate":"inf"}`, 422},
			{"infinity_rate", `{"target":"sim","request_rate":"Infinity"}`, 400},
			{"zero_burstiness", `{"target":"sim","burstiness":0}`, 400},
			{"negative_burstiness", `{"target":"sim","burstiness":-1}`, 400},
			{"huge_burstiness", `{"target":"sim","burstiness":1e300}`, 400},
			{"zero_concurrency", `{"target":"sim","max_concurrency":0}`, 400},
			{"concurrency_over_limit", `{"target":"sim","max_concurrency":1000000}`, 422},
			{"negative_duration", `{"target":"sim","max_duration":"-5m"}`, 400},
			{"garbage_duration", `{"target":"sim","max_duration":"forever"}`, 400},
			{"duration_over_limit", `{"target":"sim","max_duration":"100000h"}`, 422},
			{"duration_overflow", `{"target":"sim","max_duration":"99999999999999999999h"}`, 400},
			{"huge_input_len", `{"target":"sim","random_input_len":2000000000}`, 400},
			{"negative_output_len", `{"target":"sim","random_output_len":-5}`, 400},
			{"range_ratio_over_1", `{"target":"sim","random_range_ratio":2}`, 400},
			{"huge_warmup", `{"target":"sim","warmup_requests":100000}`, 400},
			{"huge_seed", `{"target":"sim","seed":1e30}`, 400},
			{"long_tag", `{"target":"sim","tag":"` + strings.Repeat("x", 300) + `"}`, 400},
			{"bad_goodput", `{"target":"sim","goodput":["ttft:-1"]}`, 400},
			{"bad_compat", `{"target":"sim","compat":"rm -rf /"}`, 400},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := do(t, "POST", p.url("/api/v1/benches"), tc.body)
				if code != tc.want && !(tc.want == 422 && code == 413) {
					t.Errorf("POST %.80q = %d %s, want %d", tc.body, code, body, tc.want)
				}
				var e struct{ Error string }
				if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
					t.Errorf("POST %.80q: body %q is not a JSON error", tc.body, body)
				}
			})
		}
		// None of them started a run.
		if _, body := do(t, "GET", p.url("/api/v1/benches"), ""); strings.Contains(body, `"id"`) {
			t.Errorf("a rejected body started a run: %s", body)
		}
	})

	t.Run("results_id_traversal", func(t *testing.T) {
		for _, id := range []string{"..%2F..%2F..%2Fetc%2Fpasswd", "%2e%2e", "..", "bench-0123456789abcdef01234567",
			"0123456789abcdef01234567", "89abcdef0123456789abcdef", "0123456789ABCDEF01234567", "0123456789abcdef01234567%00",
			strings.Repeat("a", 4096)} {
			for _, m := range []string{"GET", "DELETE"} {
				code, body := do(t, m, p.url("/api/v1/benches/"+id), "")
				if code != 404 && code != 400 && code != 301 && code != 405 {
					t.Errorf("%s /api/v1/benches/%.40s = %d %s, want 404", m, id, code, body)
				}
				if strings.Contains(body, "root:") {
					t.Errorf("%s /api/v1/benches/%.40s served a file outside the results dir", m, id)
				}
			}
		}
	})

	t.Run("trigger_flood", func(t *testing.T) {
		body := `{"target":"sim","num_prompts":400,"request_rate":5,"warmup_requests":0,"max_concurrency":2}`
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var id, runTarget string
		for i := range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := body
				if i%3 == 2 {
					b = strings.Replace(body, `"sim"`, `"other"`, 1)
				}
				code, resp := do(t, "POST", p.url("/api/v1/benches"), b)
				mu.Lock()
				defer mu.Unlock()
				codes[code]++
				if code == 202 {
					var v struct{ ID, Target string }
					_ = json.Unmarshal([]byte(resp), &v)
					id, runTarget = v.ID, v.Target
				}
			}()
		}
		wg.Wait()
		if codes[202] != 1 || codes[202]+codes[409]+codes[422] != 60 {
			t.Errorf("60 concurrent triggers answered %v, want exactly one 202 and only 409 or 422 otherwise", codes)
		}
		_, list := do(t, "GET", p.url("/api/v1/benches"), "")
		if n := strings.Count(list, `"status": "running"`) + strings.Count(list, `"status": "queued"`); n != 1 {
			t.Errorf("%d runs active after the flood, want 1:\n%s", n, list)
		}
		if id == "" {
			return
		}
		// A reload that keeps the target does not cancel the run.
		more := append(f.targets, hostile.Target{Name: "added", URL: f.sim, Model: hostile.SimModel, Interval: 5 * time.Second})
		f.write(t, more)
		if code, b := do(t, "POST", p.url("/-/reload"), ""); code != 200 {
			t.Fatalf("reload: %d %s", code, b)
		}
		time.Sleep(2500 * time.Millisecond) // past the run's target watch interval
		if v := benchView(t, p, id); v.Ended != nil {
			t.Fatalf("a reload that kept the target ended the run: %+v", v)
		}
		// A reload that removes the target cancels the run and says why.
		var kept []hostile.Target
		for _, tg := range f.targets {
			if tg.Name != runTarget {
				kept = append(kept, tg)
			}
		}
		f.write(t, kept)
		if code, b := do(t, "POST", p.url("/-/reload"), ""); code != 200 {
			t.Fatalf("reload: %d %s", code, b)
		}
		deadline := time.Now().Add(10 * time.Second)
		var v benchState
		for time.Now().Before(deadline) {
			if v = benchView(t, p, id); v.Ended != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if v.Ended == nil || v.Status != "canceled" || !strings.Contains(v.Error, "removed") {
			t.Errorf("after its target was removed, the run is %+v; want canceled with the reason\nstderr:\n%s", v, p.stderr)
		}
		if _, err := os.Stat(filepath.Join(f.results, "bench-"+id+".jsonl")); err != nil {
			t.Errorf("the canceled run's results file: %v", err)
		}
		f.write(t, f.targets)
		do(t, "POST", p.url("/-/reload"), "")
	})

	t.Run("probe_open_proxy", func(t *testing.T) {
		okBefore := f.hs.Stats(hostile.OK).Requests
		for _, tc := range []struct {
			name, target string
			want         int
		}{
			{"off_list", f.hs.URL(hostile.OK), 403},
			{"off_list_prefix", f.hs.URL(hostile.EchoAuth) + "/../ok", 403},
			{"userinfo", strings.Replace(f.hs.URL(hostile.EchoAuth), "http://", "http://u:p@", 1), 403},
			{"other_scheme", "file:///etc/passwd", 400},
			{"gopher", "gopher://127.0.0.1:70/", 400},
			{"metadata", "http://169.254.169.254/latest/meta-data/", 403},
			{"on_list", f.hs.URL(hostile.EchoAuth), 200},
			{"redirect_not_followed", f.hs.URL(hostile.RedirectAway), 200},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := do(t, "GET", p.url("/probe?backend=openai-chat&module=probe&debug=true&target="+tc.target), "")
				if code != tc.want {
					t.Errorf("/probe?target=%s = %d %.200s, want %d", tc.target, code, body, tc.want)
				}
			})
		}
		if n := f.hs.Stats(hostile.OK).Requests - okBefore; n != 0 {
			t.Errorf("the off-list URL was requested %d times (directly or by redirect)", n)
		}
		// No credentials reuse: the ad-hoc probe to the echoing server
		// carried no Authorization, though the configured sim target has one.
		do(t, "GET", p.url("/probe?backend=openai-chat&module=probe&target="+f.hs.URL(hostile.EchoAuth)), "")
		if a := f.hs.LastAuthorization(); a != "" {
			t.Errorf("an ad-hoc probe sent Authorization %q", a)
		}
	})

	t.Run("probe_flood", func(t *testing.T) {
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := do(t, "GET", p.url("/probe?target=stall"), "")
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if codes[200] > 8 || codes[200]+codes[429] != 24 {
			t.Errorf("24 concurrent /probe of a stalling target answered %v, want at most 8 probes and 429 for the rest", codes)
		}
	})
}

// testTokenizer is a small tokenizer.json from the tokenizer package's
// testdata: bench runs need a tokenizer, and the simulator's model name is
// not a hub id.
func testTokenizer(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../tokenizer/testdata/metaspace-legacy")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type benchState struct {
	ID     string     `json:"id"`
	Status string     `json:"status"`
	Error  string     `json:"error"`
	Ended  *time.Time `json:"ended"`
}

func benchView(t *testing.T, p *daemonProc, id string) benchState {
	t.Helper()
	code, body := do(t, "GET", p.url("/api/v1/benches/"+id), "")
	var v benchState
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("GET /api/v1/benches/%s: %d %s", id, code, body)
	}
	return v
}
