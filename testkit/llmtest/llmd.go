package llmtest

import (
	"os"
	"testing"

	"github.com/servingprobe/servingprobe/testkit/external"
)

// LLMDSim returns the path of llm-d-inference-sim v0.10.2, the third-party
// vLLM simulator that tests run against: $SERVINGPROBE_LLMD_SIM (make test
// builds it once and sets this), or else .build/llm-d-inference-sim at the
// repository's root, where `make .build/llm-d-inference-sim` builds it from
// the module that pins it, tools/llmdsim (2-4 minutes the first time).
// Without it the calling test is skipped, saying so (see package
// external): a test package does not build it on its own, which took
// minutes per package and needs the module proxy.
func LLMDSim(t testing.TB) string {
	t.Helper()
	return external.Path(t, "SERVINGPROBE_LLMD_SIM", external.BuildPath("llm-d-inference-sim"),
		"llm-d-inference-sim", "run `make test`, which builds it, or `make .build/llm-d-inference-sim`",
		func(p string) error { _, err := os.Stat(p); return err })
}
