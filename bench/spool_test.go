package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSpooledDetailsMatchMemory: details kept on disk are written byte for
// byte as the in-memory ones, through Record and AppendJSONL, for every
// option, with requests missing from the index (never sent), failures,
// gaps shared by several tokens and generated texts; and memory keeps no
// details.
func TestSpooledDetailsMatchMemory(t *testing.T) {
	results, rows := sketchRun(3000)
	for i := range results {
		results[i].GeneratedText = string(rune('a'+i%26)) + "é\"\n😀"
		if results[i].Outcome != "success" {
			results[i].Err = "503 Service Unavailable"
		}
	}
	for _, noTexts := range []bool{false, true} {
		summarize := func(spool bool) Summary {
			p := fixtureParams()
			p.Details, p.DetailsNoTexts, p.SpoolDetails = true, noTexts, spool
			a := NewAccumulator(p)
			for i, r := range results {
				if i%11 == 5 {
					continue // never sent: the arrays keep a zero row
				}
				a.Add(i, r, rows[i])
			}
			s, err := a.Summary(p.Duration)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		mem, disk := summarize(false), summarize(true)
		defer disk.SpooledDetails.Close()
		if disk.Details != nil || disk.SpooledDetails == nil || mem.Details == nil {
			t.Fatal("details not kept where asked")
		}
		for _, o := range []JSONOptions{{Details: true}, {Details: true, Strict: true}, {Details: true, StandardOnly: true}, {}} {
			want, err := mem.Record(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := disk.Record(o)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("texts %v, %+v: spooled record differs (%d bytes against %d)", !noTexts, o, len(got), len(want))
			}
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := disk.AppendJSONL(path, o); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if !bytes.Equal(b, append([]byte("{}\n"), want...)) {
				t.Fatalf("%+v: AppendJSONL wrote another line", o)
			}
		}
		if len(mem.Details.InputLens) != len(results) {
			t.Fatalf("%d rows, want %d", len(mem.Details.InputLens), len(results))
		}
	}
}
