package datasets_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/datasets"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The files below are small files in each source's own format: SPEED-Bench's
// prepared JSONL, LongBench-v2's rows as JSON lines, sglang's autobench JSONL
// (every prompt shape it accepts) and an agentic trace document.
const (
	speedBenchFile = `{"question_id": "q1", "category": "low_entropy", "turns": ["Count from one to twenty."]}
{"question_id": "q2", "category": "mixed", "turns": ["Summarise the water cycle.", "Now in one line."]}
{"question_id": "q3", "category": "high_entropy", "turns": ["Write a poem about rust."]}
{"question_id": "q4", "category": "low_entropy", "turns": []}
{"question_id": "q5", "category": "low_entropy", "turns": ["List the planets in order."]}
`
	longBenchFile = `{"_id": "a", "domain": "qa", "context": "The lighthouse was built in 1871 on a granite ledge.", "question": "When was the lighthouse built?", "choice_A": "1771", "choice_B": "1871", "choice_C": "1901", "choice_D": "1971", "answer": "B"}
{"_id": "b", "domain": "qa", "context": "Otters hold hands while sleeping so they do not drift apart. This is a long context about otters and rivers and kelp forests that goes on for a while.", "question": "Why do otters hold hands?", "choice_A": "Warmth", "choice_B": "Play", "choice_C": "To not drift apart", "choice_D": "Food", "answer": "C"}
{"_id": "c", "domain": "code", "context": "def f(x): return x * 2", "question": "What is f(3)?", "choice_A": "3", "choice_B": "5", "choice_C": "6", "choice_D": "9", "answer": "C"}
`
	autobenchFile = `{"prompt": "Tell me about tea.", "output_len": 12, "temperature": 0.5}
{"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Name a colour."}], "max_tokens": 8, "param_send": {"top_p": 0.9, "temperature": 0.1}, "extra_request_body": {"temperature": 0.2}}
{"messages": "[{\"role\": \"user\", \"content\": \"Messages as a JSON string.\"}]", "prompt_len": 99, "timestamp": 1500}
{"prompt": ["First turn.", "Second turn."], "completion_tokens": 5}
{"prompt": [[{"role": "user", "content": "Run ls."}], [{"role": "tool", "content": "a.txt b.txt"}]], "routing_key": "s1"}
{"prompt": [9707, 11, 1879], "max_completion_tokens": 3}
{"system": "You are kind.", "content": ["Hi there.", "Hello!", "How are you?"]}
`
	agenticFile = `{"metadata": {"source": "test"}, "conversations": [
  [{"messages": [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Fix the bug."}], "prompt_tokens": 40},
   {"messages": [{"role": "tool", "content": "tests failed"}], "prompt_tokens": 55},
   {"messages": [{"role": "user", "content": "Try again."}], "prompt_tokens": 70}],
  [{"messages": [], "prompt_tokens": 1}],
  [{"messages": [{"role": "user", "content": "Write docs."}], "prompt_tokens": 12}]
]}
`
)

// TestNewDatasetsGolden checks the prompts speed-bench, longbench-v2,
// autobench and agentic-trace make of their small files against
// testdata/golden (rewritten with go test ./datasets -update).
func TestNewDatasetsGolden(t *testing.T) {
	tok := qwen3(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeTestFile(t, dir, name, body) }
	speed := write("speed.jsonl", speedBenchFile)
	long := write("longbench.jsonl", longBenchFile)
	auto := write("autobench.jsonl", autobenchFile)
	agent := write("trace.json", agenticFile)
	cases := []struct {
		name, dataset string
		n             int
		mod           func(o *datasets.Options)
	}{
		{"speed-bench", "speed-bench", 3, func(o *datasets.Options) { o.DatasetPath = speed }},
		{"speed-bench-category", "speed-bench", 5, func(o *datasets.Options) {
			o.DatasetPath, o.SpeedBenchCategory, o.SpeedBenchOutputLen = speed, "low_entropy", 64
		}},
		{"speed-bench-template", "speed-bench", 2, func(o *datasets.Options) { o.DatasetPath, o.ChatTemplate = speed, fakeTemplate{} }},
		{"longbench-v2", "longbench-v2", 10, func(o *datasets.Options) { o.DatasetPath = long }},
		{"longbench-v2-context", "longbench_v2", 10, func(o *datasets.Options) {
			o.DatasetPath, o.SharegptContextLen, o.SharegptOutputLen = long, 64, 4
		}},
		{"autobench", "autobench", 0, func(o *datasets.Options) { o.DatasetPath = auto }},
		{"autobench-output-len", "autobench", 2, func(o *datasets.Options) { o.DatasetPath, o.SharegptOutputLen = auto, 7 }},
		{"agentic-trace", "agentic-trace", 0, func(o *datasets.Options) { o.DatasetPath = agent }},
		{"agentic-trace-offset", "agentic-trace", 1, func(o *datasets.Options) {
			o.DatasetPath, o.DatasetOffset, o.AgenticMaxTurns = agent, 2, 2
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := datasets.DefaultOptions()
			tc.mod(&o)
			ps := generate(t, mustNew(t, tc.dataset, o, tok), tc.n, 7)
			comparePromptsGolden(t, tc.name, ps, "TestNewDatasetsGolden")
		})
	}
}

// TestAgenticRounds replays a grouped conversation: each round ends where
// the next group begins, with the server's real reply before it.
func TestAgenticRounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(path, []byte(agenticFile), 0o600); err != nil {
		t.Fatal(err)
	}
	o := datasets.DefaultOptions()
	o.DatasetPath = path
	p := generate(t, mustNew(t, "agentic-trace", o, qwen3(t)), 1, 1)[0]
	if got := p.Rounds(); got != 3 {
		t.Fatalf("Rounds() = %d, want 3", got)
	}
	r := p.Round(2, []string{"reply one", "reply two"}, 5)
	want := []datasets.Message{
		{Role: "system", Content: "You are an agent."}, {Role: "user", Content: "Fix the bug."},
		{Role: "assistant", Content: "reply one"}, {Role: "tool", Content: "tests failed"},
		{Role: "assistant", Content: "reply two"}, {Role: "user", Content: "Try again."},
	}
	if d := cmp.Diff(want, r.Messages); d != "" {
		t.Errorf("Round(2) messages (-want +got):\n%s", d)
	}
	if r1 := p.Round(1, []string{"reply one"}, 0); len(r1.Messages) != 4 || r1.Text != "tests failed" {
		t.Errorf("Round(1) = %+v, want 4 messages ending with the tool observation", r1.Messages)
	}
}

// comparePromptsGolden compares ps, as indented JSON, with
// testdata/golden/NAME.json, which -update rewrites; test names the test
// to rerun with -update.
func comparePromptsGolden(t *testing.T, name string, ps []datasets.Prompt, test string) {
	t.Helper()
	got, err := json.MarshalIndent(ps, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./datasets -run %s -update)", err, test)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s prompts differ from %s (-want +got):\n%s", name, path, d)
	}
}
