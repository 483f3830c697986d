package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/prober"
)

// TestSpooledDetailsMatchMemory: details kept on disk are written byte for
// byte as the in-memory ones, through Record and AppendJSONL, for every
// option, with requests missing from the index (never sent), failures,
// gaps shared by several tokens, generated texts and server timings stated
// by some requests (or none); and memory keeps no details.
func TestSpooledDetailsMatchMemory(t *testing.T) {
	plain, rows := sketchRun(3000)
	for i := range plain {
		plain[i].GeneratedText = string(rune('a'+i%26)) + "é\"\n😀"
		if plain[i].Outcome != "success" {
			plain[i].Err = "503 Service Unavailable"
		}
	}
	timed := slices.Clone(plain)
	for i := range timed {
		if i%3 == 0 {
			// Durations that are no round number of seconds; some of
			// these requests are never sent (i%11 == 5), which leaves a
			// null in the array as for any request that stated none.
			timed[i].Server = prober.ServerTimings{TotalDuration: time.Duration(135904321 + i), LoadDuration: 11874202,
				PromptEvalCount: 13 + i, PromptEvalDuration: 82113540, EvalCount: i % 7, EvalDuration: time.Duration(40398112 * (i % 7))}
		}
		if i%6 == 0 {
			// vLLM's and llama.cpp's statements on some (see prober.ServerTimings).
			timed[i].Server.FirstToken, timed[i].Server.QueueDuration, timed[i].Server.PromptCachedCount = time.Duration(48250000+i), 1250000, i%5
		}
		if i%4 != 1 {
			// Trace ids on most requests: an "" where one carried none.
			timed[i].TraceID = fmt.Sprintf("%032x", i+1)
		}
	}
	for _, tc := range []struct{ noTexts, timings bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		noTexts, timings, results := tc.noTexts, tc.timings, plain
		if timings {
			results = timed
		}
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
		// The timings' array is there exactly when a request stated them,
		// one entry per row, and not in bench_serving's keys alone.
		line, err := disk.Record(JSONOptions{Details: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(line, []byte(`"first_token_duration": 0.04825, "queue_duration": 0.00125}`)); got != timings {
			t.Errorf("timings %v: the server's stated TTFT and queue in the record: %v", timings, got)
		}
		if got := bytes.Contains(line, []byte(`"trace_ids": [`)); got != timings {
			t.Errorf("texts %v, trace ids %v: trace_ids in the record: %v", !noTexts, timings, got)
		}
		if timings && (len(mem.Details.TraceIDs) != len(results) || mem.Details.TraceIDs[0] != fmt.Sprintf("%032x", 1) || mem.Details.TraceIDs[1] != "") {
			t.Errorf("trace ids %d, want one per row, each request's own", len(mem.Details.TraceIDs))
		}
		if got := bytes.Contains(line, []byte(`"server_timings": [`)); got != timings {
			t.Errorf("texts %v, timings %v: server_timings in the record: %v", !noTexts, timings, got)
		}
		if n := len(mem.Details.ServerTimings); timings && n != len(results) || !timings && n != 0 {
			t.Errorf("timings %v: %d server timings, want one per row or none", timings, n)
		}
		std, _ := disk.Record(JSONOptions{Details: true, StandardOnly: true})
		if bytes.Contains(std, []byte("server_timings")) {
			t.Error("server_timings among bench_serving's keys alone")
		}
	}
}
