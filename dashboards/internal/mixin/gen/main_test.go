package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestOutDirCreated renders private knobs into a directory that does not
// exist yet, as the README's example does.
func TestOutDirCreated(t *testing.T) {
	dir := t.TempDir()
	knobs := filepath.Join(dir, "my-knobs.yaml")
	if err := os.WriteFile(knobs, []byte("selector: 'job=\"llm-probes\"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new", "servingprobe-mixin")
	if err := run([]string{"-config", knobs, "-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rules.yaml", "alerts.yaml", "overview.json"} {
		if _, err := os.Stat(filepath.Join(out, n)); err != nil {
			t.Errorf("%s not written: %v", n, err)
		}
	}
	if err := run([]string{"-config", filepath.Join(dir, "missing.yaml"), "-out", out}, io.Discard); err == nil {
		t.Error("a missing knobs file was accepted")
	}
}
