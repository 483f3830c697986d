package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/testkit/external"
)

func TestRun(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: needs a GPU\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: got 1, want 2\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":1.5}`,
		`# q [build failed]`,
	}, "\n")
	var out strings.Builder
	code := run(strings.NewReader(in), &out, false)
	got := out.String()
	for _, want := range []string{
		"FAIL\tp\t1.500s\n",
		"c_test.go:3: got 1, want 2",
		"SKIP p TestB: b_test.go:9: needs a GPU\n",
		"# q [build failed]\n",
		"1 passed, 1 failed, 1 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 for a failed test", code)
	}
	var ok strings.Builder
	if code := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestA"}`+"\n"+`{"Action":"pass","Package":"p"}`), &ok, true); code != 0 {
		t.Errorf("exit %d for all passing, want 0:\n%s", code, ok.String())
	}
}

// TestRequireExternal: a skip for something external fails the run only
// when the run requires everything (make test), and a skip for any other
// reason never does.
func TestRequireExternal(t *testing.T) {
	skip := func(test, reason string) string {
		return strings.Join([]string{
			`{"Action":"run","Package":"p","Test":"` + test + `"}`,
			`{"Action":"output","Package":"p","Test":"` + test + `","Output":"    x_test.go:9: ` + reason + `\n"}`,
			`{"Action":"output","Package":"p","Test":"` + test + `","Output":"--- SKIP: ` + test + ` (0.00s)\n"}`,
			`{"Action":"skip","Package":"p","Test":"` + test + `"}`,
		}, "\n")
	}
	extSkip := skip("TestAlerts", external.Reason("prometheus-alertmanager (Debian's prometheus-alertmanager package)", external.ByDeps, errors.New("not found")))
	other := skip("TestSoak", "-short: about two minutes of real time")
	pass := `{"Action":"pass","Package":"p"}`
	for _, tc := range []struct {
		name    string
		in      []string
		require bool
		code    int
		report  string
	}{
		{"external skip, required", []string{extSkip, other, pass}, true, 1, "FAIL: 1 tests skipped for want of something `make test` provides"},
		{"external skip, not required", []string{extSkip, other, pass}, false, 0, "SKIP p TestAlerts: x_test.go:9: needs-external: prometheus-alertmanager"},
		{"other skip, required", []string{other, pass}, true, 0, "0 passed, 0 failed, 1 skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			code := run(strings.NewReader(strings.Join(tc.in, "\n")), &out, tc.require)
			if code != tc.code || !strings.Contains(out.String(), tc.report) {
				t.Errorf("run(require=%v) = %d, want %d with %q in the report:\n%s", tc.require, code, tc.code, tc.report, out.String())
			}
		})
	}
}
