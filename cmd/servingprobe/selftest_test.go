package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestSelftestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"selftest", "--sections=capacity,bogus"}, `unknown section "bogus"`},
		{[]string{"selftest", "--capacity.streams=1,x"}, `--capacity.streams: bad count "x"`},
		{[]string{"selftest", "--fidelity.clocks=kernel,wall"}, `--fidelity.clocks: unknown clock "wall" (want kernel or user)`},
		{[]string{"selftest", "--arrival.rates=0"}, `--arrival.rates: "0" is not a positive number`},
		{[]string{"selftest", "--role=client", "--spec={"}, "--spec:"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("run(%q) = %d, stderr %q; want 1 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("1, 64,,8192")
	if err != nil || len(got) != 3 || got[2] != 8192 {
		t.Errorf("parseInts = %v, %v", got, err)
	}
}
