package llmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// LLMDSim returns the path of llm-d-inference-sim v0.10.2, the third-party
// vLLM simulator that tests run against: $SERVINGPROBE_LLMD_SIM (make test
// builds it once and sets this), or else built from the module that pins it,
// tools/llmdsim
// (2-4 minutes the first time; the Go build cache makes later builds fast).
// With -short and no binary given, the calling test is skipped rather than
// waiting for the build.
func LLMDSim(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SERVINGPROBE_LLMD_SIM"); p != "" {
		return p
	}
	if testing.Short() {
		t.Skip("-short: not building llm-d-inference-sim (set SERVINGPROBE_LLMD_SIM to run this test)")
	}
	_, file, _, _ := runtime.Caller(0)
	tools := filepath.Join(filepath.Dir(file), "..", "..", "tools", "llmdsim")
	bin := filepath.Join(t.TempDir(), "llm-d-inference-sim")
	cmd := exec.Command("go", "build", "-C", tools, "-o", bin, "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build llm-d-inference-sim: %v\n%s", err, out)
	}
	return bin
}
