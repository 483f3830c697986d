package doctest

import (
	"strings"
	"testing"
	"time"
)

func TestMatchShown(t *testing.T) {
	t.Parallel()
	output := strings.Join([]string{
		"ts=2026-11-28T04:25:11Z level=info msg=\"Warming up\"",
		"============ Serving Benchmark Result ============",
		"Backend:                                 sglang    ",
		"Successful requests:                     200       ",
		"Mean TTFT (ms):                          52.09     ",
		"TTFT ours - server P50/P90/P99 (ms):     2.71 / -0.28 / 4.19",
		"Highest request rate meeting the SLO: 59.89 req/s (it breaks by 65.31 req/s).",
	}, "\n")
	for _, tc := range []struct {
		name  string
		shown []string
		ok    bool
	}{
		{"other numbers and spaces", []string{"Successful requests: 100", "Mean TTFT (ms):    60.1"}, true},
		{"elided lines", []string{"...", "Backend:   sglang", "...", "Highest request rate meeting the SLO: 1 req/s (it breaks by 2 req/s)."}, true},
		{"out of order", []string{"Mean TTFT (ms): 1", "Backend: sglang"}, false},
		{"other words", []string{"Backend: vllm"}, false},
		{"a number for a word", []string{"Successful requests: all"}, false},
		{"a part of a line is not the line", []string{"Successful requests:"}, false},
		{"a line missing", []string{"Failed requests: 0"}, false},
		{"nothing shown", nil, true},
	} {
		if _, ok := matchShown(tc.shown, output); ok != tc.ok {
			t.Errorf("%s: matchShown = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	page := strings.Join([]string{
		"text",
		`<!-- docs-test: budget=30s expect="a b" expect="c" -->`,
		"```console",
		"$ servingprobe simulate --web.listen-address=127.0.0.1:8000 &",
		`$ servingprobe bench --port 8000 \`,
		"    --num-prompts 10",
		"...",
		"Successful requests: 10",
		"```",
		"```json",
		`{"not": "a command"}`,
		"```",
		`<!-- docs-test: skip="needs a cluster" -->`,
		"```sh",
		"kubectl apply -f x.yaml",
		"```",
		"```sh",
		"no directive",
		"```",
	}, "\n")
	bs := parseBlocks("p.md", page)
	if len(bs) != 3 {
		t.Fatalf("%d blocks, want 3 (the json block is not a command)", len(bs))
	}
	b := bs[0]
	if b.dir == nil || b.dir.budget != 30*time.Second || len(b.dir.expects) != 2 || len(b.parseErrs) != 0 {
		t.Fatalf("first block: %+v %+v", b.dir, b.parseErrs)
	}
	if len(b.commands) != 2 || !b.commands[0].background || b.commands[1].background ||
		b.commands[1].text != "servingprobe bench --port 8000 \\\n    --num-prompts 10" || b.commands[1].line != 5 {
		t.Errorf("commands: %+v", b.commands)
	}
	if got := shownLines(b.commands[1].shown); len(got) != 1 || got[0] != "Successful requests: 10" {
		t.Errorf("shown: %q", got)
	}
	if bs[1].dir == nil || bs[1].dir.skip != "needs a cluster" || bs[1].script != "kubectl apply -f x.yaml" {
		t.Errorf("skip block: %+v", bs[1])
	}
	if bs[1].saysNotRun() {
		t.Error("a skipped block that does not say so passes saysNotRun")
	}
	said := parseBlocks("p.md", "Needs a cluster, so not run by the test:\n\n<!-- docs-test: skip=\"cluster\" -->\n```sh\nkubectl get pods\n```\n")
	if len(said) != 1 || !said[0].saysNotRun() {
		t.Errorf("the paragraph above says not run, but saysNotRun is false: %+v", said)
	}
	if bs[2].dir != nil {
		t.Errorf("block without a directive got %+v", bs[2].dir)
	}
}

func TestParseDirectiveRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		``,                      // neither run nor skip
		`skip=""`,               // no reason
		`budget=10s skip="why"`, // both
		`budget=1h`,             // past maxBudget
		`budget=fast`,           // not a duration
		`budget=10s expect="("`, // bad expression
		`skip="why" expect="x"`, // a check on a block not run
		`budget=10s timeout=5s`, // unknown key
		`budget=10s "stray"`,    // not key=value
	} {
		if d, err := parseDirective(s); err == nil {
			t.Errorf("parseDirective(%q) = %+v, want an error", s, d)
		}
	}
	if d, err := parseDirective(` budget=90s `); err != nil || d.budget != 90*time.Second {
		t.Errorf("budget=90s: %+v, %v", d, err)
	}
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	s := &session{t: t, ports: map[string]string{}}
	a := s.rewrite("go run ./cmd/servingprobe simulate --web.listen-address=127.0.0.1:30000", true)
	b := s.rewrite("go run ./cmd/servingprobe bench --host 127.0.0.1 --port 30000 --num-prompts 100", false)
	c := s.rewrite("servingprobe serve --demo", true)
	d := s.rewrite("curl -s localhost:9775/metrics", false)
	p := s.ports["30000"]
	if a != "servingprobe simulate --web.listen-address=127.0.0.1:"+p {
		t.Errorf("a = %q", a)
	}
	if b != "servingprobe bench --host 127.0.0.1 --port "+p+" --num-prompts 100" {
		t.Errorf("b = %q (the prompt count is not a port)", b)
	}
	q := s.ports["9775"]
	if c != "servingprobe serve --demo --web.listen-address=127.0.0.1:"+q || d != "curl -s localhost:"+q+"/metrics" {
		t.Errorf("c = %q, d = %q", c, d)
	}
	if p == "30000" || q == "9775" || p == q {
		t.Errorf("ports %s and %s", p, q)
	}
}
