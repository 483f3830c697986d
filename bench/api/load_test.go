package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/exporter"
)

func TestLoadRemovesInterruptedWrites(t *testing.T) {
	dir := t.TempDir()
	id := "0123456789abcdef01234567"
	now := time.Now()
	if err := writeTestView(dir, View{ID: id, Target: "t", Status: exporter.BenchSucceeded, Ended: &now}); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".bench-"+id+"-123.tmp")
	if err := os.WriteFile(tmp, []byte(`{"id":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Windows{logger: log.NewNopLogger(), runs: map[string]*benchRun{}, o: Options{MaxListed: 10}}
	if err := b.load(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("interrupted write %s still there (stat: %v)", tmp, err)
	}
	if _, ok := b.runs[id]; !ok || len(b.runs) != 1 {
		t.Errorf("runs after load = %v, want just %s", b.runs, id)
	}
}

// writeTestView writes v as the daemon does.
func writeTestView(dir string, v View) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(dir, v.ID, resultFile(dir, v.ID), append(line, '\n'))
}
