package exporter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/config"
	"github.com/servingprobe/servingprobe/prober"
)

// TestCheckConfigBackends: a config naming a backend that is not one of
// the prober's is refused at load, with the target's place in the file,
// by the path serve, reload and check-config share; the probe builder is
// not reached.
func TestCheckConfigBackends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yml")
	cfg := `
targets:
  - {name: a, url: "http://127.0.0.1:1", backend: vllm, modules: [m]}
  - {name: b, url: "http://127.0.0.1:1", backend: tgi, modules: [m]}
  - {name: c, url: "http://127.0.0.1:1", backend: gserver, modules: [m]}
modules:
  m: {dataset: fixed, prompt: hello}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	built := 0
	_, err := CheckConfig(path, func() ProbeBuilder {
		b := testBuilder()
		return func(tg config.Target, name string, m config.Module) (prober.ProbeFunc, error) {
			built++
			return b(tg, name, m)
		}
	}(), nil)
	for _, want := range []string{
		`targets[1].backend: unknown backend "tgi" (one of anthropic, `,
		`targets[2].backend: backend gserver is not supported: NotImplementedError`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckConfig: %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "targets[0]") {
		t.Errorf("CheckConfig: %v, want target a accepted", err)
	}
	if built != 0 {
		t.Errorf("probe builder called %d times, want none for a refused config", built)
	}
}
