package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/testkit/hostile"
)

// TestKill9KeepsResults runs short bench runs back to back through the
// API of the built binary and SIGKILLs it at random moments, so that some
// kills land during a results write. After every kill, every results file
// must parse and name its own id, and after the restart every run the API
// had reported as ended must be listed again.
func TestKill9KeepsResults(t *testing.T) {
	sim, stopSim, err := hostile.StartSimulator()
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	cfgPath := filepath.Join(dir, "servingprobe.yml")
	const lanes = 4 // targets, each with its own stream of runs
	var targets []hostile.Target
	for i := range lanes {
		targets = append(targets, hostile.Target{Name: fmt.Sprintf("sim%d", i), URL: sim, Model: hostile.SimModel, Interval: 5 * time.Second})
	}
	extra := fmt.Sprintf("bench:\n  results_dir: %q\n  max_concurrent_runs: %d\n", results, lanes)
	if err := os.WriteFile(cfgPath, []byte(hostile.ConfigWithTokenizer(targets, extra, testTokenizer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	ended := map[string]bool{} // ids the API reported as ended, across restarts
	const rounds = 6
	tmpLeft := 0
	for round := range rounds {
		p := startDaemon(t, cfgPath)
		checkListed(t, p, ended, round)
		killAt := time.Now().Add(time.Duration(800+rng.IntN(1500)) * time.Millisecond)
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for lane := range lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"target":"sim%d","num_prompts":2,"request_rate":50,"warmup_requests":0,"max_duration":"10s"}`, lane)
				for time.Now().Before(killAt) {
					code, resp := doNoFail(p, "POST", "/api/v1/benches", body)
					if code != 202 {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					var v benchState
					_ = json.Unmarshal([]byte(resp), &v)
					for time.Now().Before(killAt) {
						_, b := doNoFail(p, "GET", "/api/v1/benches/"+v.ID, "")
						var s benchState
						if json.Unmarshal([]byte(b), &s) == nil && s.Ended != nil {
							mu.Lock()
							ended[s.ID] = true
							mu.Unlock()
							break
						}
						time.Sleep(2 * time.Millisecond)
					}
				}
			}()
		}
		time.Sleep(time.Until(killAt))
		p.kill()
		wg.Wait()
		tmpLeft = checkResultsDir(t, results) // they stay: the count so far
	}
	p := startDaemon(t, cfgPath)
	checkListed(t, p, ended, rounds)
	p.stop(t)
	if len(ended) < 2*rounds {
		t.Errorf("only %d runs ended over %d rounds; the test did not exercise the writes", len(ended), rounds)
	}
	t.Logf("%d runs ended over %d kills; %d temporary files left behind by kills", len(ended), rounds, tmpLeft)
}

// doNoFail is do without failing the test: the daemon may be killed.
func doNoFail(p *daemonProc, method, path, body string) (int, string) {
	req, err := newRequest(method, p.url(path), body)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := shortClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return resp.StatusCode, b.String()
}

// checkResultsDir parses every results file and returns how many
// temporary files are in the directory.
func checkResultsDir(t *testing.T, dir string) (tmp int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			tmp++
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".html") {
			// A run's report, written atomically before its result: whole.
			if !strings.HasPrefix(name, "bench-") || !strings.HasSuffix(string(b), "</html>\n") {
				t.Errorf("report %s is cut short: ...%q", name, b[max(len(b)-60, 0):])
			}
			continue
		}
		var v benchState
		if err := json.Unmarshal(b, &v); err != nil || !strings.HasSuffix(string(b), "\n") || strings.Count(string(b), "\n") != 1 {
			t.Errorf("results file %s is corrupt (%v): %.200q", name, err, b)
			continue
		}
		// A window is recorded when it is accepted and when it starts, so
		// a kill leaves some not ended; the restart lists them as
		// interrupted.
		if name != "bench-"+v.ID+".jsonl" || (v.Ended == nil) != (v.Status == "queued" || v.Status == "running") {
			t.Errorf("results file %s holds run %s status %s ended=%v", name, v.ID, v.Status, v.Ended)
		}
	}
	return tmp
}

func checkListed(t *testing.T, p *daemonProc, ended map[string]bool, round int) {
	t.Helper()
	_, body := do(t, "GET", p.url("/api/v1/benches"), "")
	var list struct{ Benches []benchState }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("GET /api/v1/benches: %v", err)
	}
	listed := map[string]bool{}
	for _, b := range list.Benches {
		listed[b.ID] = true
	}
	for id := range ended {
		if !listed[id] {
			t.Errorf("after restart %d, run %s, reported ended before a kill, is not listed", round, id)
		}
	}
}
