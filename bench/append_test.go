package bench

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// shortFile is an *os.File whose writes stop with ENOSPC after room
// bytes, having written those: a disk that fills during the write.
type shortFile struct {
	*os.File
	room int
}

func (f *shortFile) Write(p []byte) (int, error) {
	if len(p) <= f.room {
		f.room -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.room])
	f.room = 0
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// A failed append leaves the file as it was, and says so; the next
// append then reads back.
func TestAppendRecordFailureLeavesFile(t *testing.T) {
	t.Parallel()
	s := mustFixtureSummary(t)
	rec, err := s.Record(JSONOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, room := range []int{0, 1, len(rec) / 2, len(rec) - 1} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		const before = "{\"previous\":1}\n"
		if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = appendRecord(&shortFile{f, room}, true, func(w io.Writer) error {
			_, err := w.Write(rec)
			return err
		})
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "left as it was") {
			t.Errorf("room %d: appendRecord() error = %v, want ENOSPC saying the file is left as it was", room, err)
		}
		if b, _ := os.ReadFile(path); string(b) != before {
			t.Errorf("room %d: file after a failed append = %q, want %q", room, b, before)
		}
	}
}

// A file that ends in a partial record (left by an older writer) gets a
// newline before the new record, so that the new record reads back.
func TestAppendJSONLAfterPartialRecord(t *testing.T) {
	t.Parallel()
	s := mustFixtureSummary(t)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte(`{"cut":"sho`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendJSONL(path, JSONOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != `{"cut":"sho` {
		t.Fatalf("file = %q, want the partial record and the new one on lines of their own", b)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Errorf("the new record does not read back: %v", err)
	}
}

// /dev/full is a real full device: the append fails and says so.
func TestAppendJSONLDevFull(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	s := mustFixtureSummary(t)
	if err := s.AppendJSONL("/dev/full", JSONOptions{Strict: true}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("AppendJSONL(/dev/full) error = %v, want ENOSPC", err)
	}
}

func mustFixtureSummary(t *testing.T) *Summary {
	t.Helper()
	results, rows := fixture()
	s, err := Summarize(results, rows, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	return &s
}
