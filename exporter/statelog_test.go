package exporter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/prober"
)

func TestStateLog(t *testing.T) {
	var b bytes.Buffer
	s := newStateLog(log.NewLogfmtLogger(&b))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := func(sec int, target string, o prober.Outcome) prober.Result {
		r := prober.Result{Target: target, Module: "m", Outcome: o, End: t0.Add(time.Duration(sec) * time.Second)}
		if o != prober.OutcomeSuccess {
			r.HTTPStatus, r.Err = 503, "503 Service Unavailable: overloaded"
		}
		return r
	}
	for _, r := range []prober.Result{
		res(0, "a", prober.OutcomeSuccess), // first success: silent
		res(1, "a", prober.OutcomeSuccess),
		res(2, "a", prober.OutcomeHTTP5xx), // starts failing: one line
		res(3, "a", prober.OutcomeHTTP5xx), // still failing: silent
		res(4, "a", prober.OutcomeTimeout), // another failing outcome: still silent
		res(9, "a", prober.OutcomeSuccess), // recovered after 3 failures, down 7 s
		res(10, "a", prober.OutcomeSuccess),
		res(0, "b", prober.OutcomeHTTP5xx), // a first probe that fails is logged
	} {
		s.Observe(r)
	}
	want := []string{
		`level=info msg="Probes failing" target=a module=m outcome=http_5xx http_status=503 err="503 Service Unavailable: overloaded"`,
		`level=info msg="Probes recovered" target=a module=m failed_probes=3 down_for=7s`,
		`level=info msg="Probes failing" target=b module=m outcome=http_5xx http_status=503 err="503 Service Unavailable: overloaded"`,
	}
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.forget(func(target, _ string) bool { return target == "a" })
	if _, ok := s.state[[2]string{"b", "m"}]; ok {
		t.Error("forget kept a removed target")
	}
}
