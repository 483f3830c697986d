package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/bench"
	"github.com/servingprobe/servingprobe/bench/api"
	"github.com/servingprobe/servingprobe/exporter"
)

// TestFlagValueErrors: a value that does not parse is refused before any
// command runs (exit 2) with the flag's name, what was wrong and a valid
// value, whichever command the flag belongs to.
func TestFlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"int", []string{"probe", "--max-tokens=abc"}, `--max-tokens: "abc" is not a whole number (e.g. 64)`},
		{"int given a fraction, which kingpin truncates", []string{"probe", "--max-tokens", "1.5"}, `--max-tokens: "1.5" is not a whole number (e.g. 64)`},
		{"duration without a unit", []string{"probe", "--timeout=5"}, `--timeout: "5" is not a duration (a number with a unit, e.g. 5s or 500ms)`},
		{"duration of bench's own", []string{"bench", "--remote.poll-interval", "fast"}, `--remote.poll-interval: "fast" is not a duration (a number with a unit, e.g. 5s or 500ms)`},
		{"simulator duration", []string{"simulate", "--sim.itl=3"}, `--sim.itl: "3" is not a duration (a number with a unit, e.g. 5s or 500ms)`},
		{"unsigned", []string{"simulate", "--sim.seed=-1"}, `--sim.seed: "-1" is not a whole number of 0 or more (e.g. 1)`},
		{"int of serve", []string{"serve", "--web.max-connections=many"}, `--web.max-connections: "many" is not a whole number (e.g. 1024)`},
		{"int of selftest", []string{"selftest", "--capacity.output-tokens=x"}, `--capacity.output-tokens: "x" is not a whole number (e.g. 512)`},
		{"global enum", []string{"--log.level=loud", "probe"}, `--log.level: enum value must be one of debug,info,warn,error, got 'loud'`},
		{"a value of another package keeps its words", []string{"simulate", "--sim.fault-rate=xx"}, `--sim.fault-rate: fault rate "xx": want name:probability`},
		{"bench's own values, in argparse's words", []string{"bench", "--extra-request-body", "[1]"}, `argument --extra-request-body: must be a JSON object, got an array`},
		{"a switch given a value", []string{"probe", "--stream=false"}, `--stream takes no value (got "false"): --stream turns it on, --no-stream off`},
		{"a bench switch given a value", []string{"bench", "--output-details=yes"}, `--output-details takes no value (got "yes"): --output-details turns it on, --no-output-details off`},
		{"a mistyped command", []string{"bnech", "--num-prompts", "5"}, `unknown command "bnech" (did you mean bench?)`},
		{"a mistyped command after a global flag", []string{"--log.level", "debug", "serv"}, `unknown command "serv" (did you mean serve?)`},
		{"a command in capitals", []string{"BENCH"}, `unknown command "BENCH" (did you mean bench?)`},
		{"no command near", []string{"xyzzy"}, `unknown command "xyzzy" (one of help, serve, bench, probe, report, merge, compare, simulate, check-config, selftest, tokenize)`},
		{"a mistyped flag", []string{"probe", "--max-token=5"}, `unknown long flag '--max-token' (did you mean --max-tokens?)`},
		{"a mistyped global flag", []string{"simulate", "--log.levle=debug"}, `unknown long flag '--log.levle' (did you mean --log.level?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if want := "servingprobe: " + tc.want + "\n"; code != 2 || stderr != want || stdout != "" {
				t.Errorf("run(%q) = %d, stderr %q, stdout %q; want 2, stderr %q", tc.args, code, stderr, stdout, want)
			}
		})
	}
}

// TestEveryFlagValueErrorNamesItsFlag holds every flag of every command,
// present and future, to nameFlagErrors: each one's value is wrapped
// (or is kingpin's plain string, which refuses nothing), and a refusal
// of a value that is no flag's is named by that flag, once.
func TestEveryFlagValueErrorNamesItsFlag(t *testing.T) {
	app, _, _ := newApp(io.Discard, io.Discard)
	nameFlagErrors(app)
	var flags []*kingpin.FlagModel
	flags = append(flags, app.Model().Flags...)
	for _, c := range app.Model().Commands {
		flags = append(flags, c.Flags...)
	}
	if len(flags) < 100 {
		t.Fatalf("%d flags: the walk missed commands", len(flags))
	}
	wrapped := 0
	for _, f := range flags {
		v, ok := f.Value.(*namedValue)
		if !ok {
			if reflect.TypeOf(f.Value) != stringValueType {
				t.Errorf("--%s: value %T is not wrapped by nameFlagErrors", f.Name, f.Value)
			}
			continue
		}
		wrapped++
		if v.name != f.Name {
			t.Errorf("--%s: wrapped under the name %q", f.Name, v.name)
		}
		for _, d := range f.Default {
			// kingpin sets defaults through the wrapper too: the stricter
			// integer check must take every default there is.
			if !v.kind.accepts(d) {
				t.Errorf("--%s: its default %q is refused", f.Name, d)
			}
		}
		if v.IsBoolFlag() {
			continue // kingpin passes a switch only true or false
		}
		err := v.Set("\x00 no value at all")
		if err == nil {
			continue // a value that takes any text
		}
		var fe *flagError
		if !errors.As(err, &fe) || fe.Flag != f.Name || strings.Count(err.Error(), "--"+f.Name+":") != 1 {
			t.Errorf("--%s: Set refused with %q, want it named by the flag once", f.Name, err)
		}
	}
	if wrapped < 50 {
		t.Errorf("%d flags wrapped, want most of %d", wrapped, len(flags))
	}
}

// TestSimulateHelpFaultRateExample: the help shows --sim.fault-rate's
// syntax as a placeholder and its example as an example; kingpin shows a
// placeholder where it shows other flags' defaults, so an example there
// read as a fault injected by default.
func TestSimulateHelpFaultRateExample(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "--help")
	if code != 0 {
		t.Fatalf("simulate --help exited %d: %s", code, stderr)
	}
	help := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"--sim.fault-rate=FAULT:PROBABILITY ...", "(e.g. 500:0.01, a 500 answer to 1% of requests)", "none by default"} {
		if !strings.Contains(help, want) {
			t.Errorf("simulate --help lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(help, "--sim.fault-rate=500:0.01") {
		t.Errorf("simulate --help still shows an example fault rate where defaults stand:\n%s", stdout)
	}
}

// fakeDaemon answers a bench window as a daemon whose run ended at once,
// with sum as its summary. It counts the requests it gets.
func fakeDaemon(t *testing.T, sum bench.Summary) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	js, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	view := api.View{ID: "b1", Target: "sim", Status: exporter.BenchSucceeded, Started: &now, Ended: &now, Summary: js}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/benches" {
			http.Error(w, "unexpected", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(view)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

// TestBenchRemoteRefusesLocalOnlyFlags: the flags that need each request
// on this side are refused with --remote before anything is sent; they
// used to be accepted and do nothing (no details in the file, an empty
// plot, no request lines).
func TestBenchRemoteRefusesLocalOnlyFlags(t *testing.T) {
	for _, tc := range []struct {
		flag, why string
	}{
		{"--output-details", "a daemon's run record keeps no per-request arrays"},
		{"--plot-throughput", "a daemon's run record keeps no per-request times to plot"},
		{"--print-requests", "the daemon sends the requests"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			url, calls := fakeDaemon(t, bench.Summary{Backend: "sglang"})
			out := filepath.Join(t.TempDir(), "out.jsonl")
			code, _, stderr := runCLI(t, "bench", "--remote", url, "--remote.target", "sim", "--output-file", out, tc.flag)
			want := "servingprobe bench: " + tc.flag + " cannot be used with --remote: " + tc.why
			if code != 1 || !strings.HasPrefix(stderr, want) {
				t.Errorf("bench --remote %s = %d, stderr %q; want 1 and %q", tc.flag, code, stderr, want)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d requests reached the daemon, want none", n)
			}
		})
	}
}

// TestBenchRemoteTableConcurrencyLabel: a remote run without
// --max-concurrency ran at the daemon's limit, and the table's row says so
// in bench_serving's columns; given the flag, the row is bench_serving's.
func TestBenchRemoteTableConcurrencyLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the daemon's limit", nil, "Max request concurrency (daemon limit):  16        \n"},
		{"the user's setting", []string{"--max-concurrency", "16"}, "Max request concurrency:                 16        \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, calls := fakeDaemon(t, bench.Summary{Backend: "sglang", MaxConcurrency: 16, Completed: 3})
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append([]string{"bench", "--remote", url, "--remote.target", "sim", "--output-file", out, "--disable-tqdm"}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("bench --remote exited %d: %s", code, stderr)
			}
			if calls.Load() != 1 {
				t.Errorf("%d requests to the daemon, want 1", calls.Load())
			}
			if !strings.Contains(stdout, "\n"+tc.want) || strings.Count(stdout, "Max request concurrency") != 1 {
				t.Errorf("the table lacks the row %q:\n%s", tc.want, stdout)
			}
			if !strings.Contains(stdout, "Successful requests:                     3") {
				t.Errorf("the rest of the table moved:\n%s", stdout)
			}
		})
	}
}
