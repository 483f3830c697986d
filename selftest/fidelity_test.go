package selftest

import (
	"encoding/json"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/prober"
)

// at is a wall-clock instant (no monotonic reading, so Sub and UnixNano
// agree) ms milliseconds after a fixed origin.
func at(ms float64) time.Time { return time.Unix(1_800_000_000, int64(math.Round(ms*1e6))) }

func nanos(ms float64) int64 { return at(ms).UnixNano() }

func truthOf(t *testing.T, js string) truthJSON {
	t.Helper()
	var tr truthJSON
	if err := json.Unmarshal([]byte(js), &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestCompare(t *testing.T) {
	// The client sends at 0 and writes the request by 0.05; the kernel
	// receives it at 0.1, the simulator reads it at 2, its handler runs at
	// 5. The first token's write begins at 102.1 (flush returns at 102.3),
	// the second's at 112 (flush returns at 115: the writer waited for the
	// CPU). The client stamps them at 102.5 and 112.4.
	client := prober.Result{
		Sent: at(0), FirstToken: at(102.5),
		Events: []prober.Event{{At: at(102.5), Tokens: 1}, {At: at(112.4), Tokens: 1}},
		Trace:  prober.Trace{WroteRequest: at(0.05), ConnReused: true},
	}
	stamped := `{"received_unix_nano":` + itoa(nanos(0.1)) + `,"read_unix_nano":` + itoa(nanos(2)) + `,"arrived_unix_nano":` + itoa(nanos(5)) + `,"chunks":[
		{"kind":"role","offset_nanos":97000000,"unix_nano":` + itoa(nanos(102)) + `,"tokens":0},
		{"kind":"token","offset_nanos":97300000,"unix_nano":` + itoa(nanos(102.3)) + `,"write_unix_nano":` + itoa(nanos(102.1)) + `,"tokens":1},
		{"kind":"token","offset_nanos":110000000,"unix_nano":` + itoa(nanos(115)) + `,"write_unix_nano":` + itoa(nanos(112)) + `,"tokens":1},
		{"kind":"done","offset_nanos":110000000,"unix_nano":` + itoa(nanos(115)) + `,"tokens":0}]}`
	ms := func(v float64) int64 { return int64(math.Round(v * 1e6)) }
	want := sample{
		ttftErr: ms(102.5 - (102.1 - 0.1)), itlErr: []int64{ms((112.4 - 102.5) - (112 - 102.1))},
		oldTTFTErr: ms(102.5 - 97.3), oldITLErr: []int64{ms((112.4 - 102.5) - (115 - 102.3))},
		reqPath: ms(0.1), send: ms(0.05), hasSend: true,
		readLag: ms(1.9), handlerLag: ms(3), hasReadLag: true, hasHandlerLag: true,
		delivery: []int64{ms(0.4), ms(0.4)}, stampLag: []int64{ms(0.2), ms(3)},
	}
	for _, tc := range []struct {
		name   string
		r      prober.Result
		truth  string
		want   sample
		wantOK bool
	}{
		{"stamped", client, stamped, want, true},
		{"unstamped: TTFT from the handler, chunks at the flush", client, `{"arrived_unix_nano":` + itoa(nanos(5)) + `,"chunks":[
			{"offset_nanos":97300000,"unix_nano":` + itoa(nanos(102.3)) + `,"tokens":1},
			{"offset_nanos":110000000,"unix_nano":` + itoa(nanos(115)) + `,"tokens":1}]}`,
			sample{
				ttftErr: ms(102.5 - 97.3), itlErr: []int64{ms((112.4 - 102.5) - (115 - 102.3))},
				oldTTFTErr: ms(102.5 - 97.3), oldITLErr: []int64{ms((112.4 - 102.5) - (115 - 102.3))},
				reqPath: ms(5), send: ms(0.05), hasSend: true,
				delivery: []int64{ms(0.2), ms(-2.6)},
			}, true},
		{"new connection, no trace", prober.Result{Sent: at(0), FirstToken: at(102.5), Events: client.Events[:1]},
			`{"read_unix_nano":` + itoa(nanos(2)) + `,"arrived_unix_nano":` + itoa(nanos(5)) + `,"chunks":[
			{"offset_nanos":97300000,"unix_nano":` + itoa(nanos(102.3)) + `,"write_unix_nano":` + itoa(nanos(102.1)) + `,"tokens":1}]}`,
			sample{
				ttftErr: ms(102.5 - 100.1), itlErr: []int64{}, oldTTFTErr: ms(102.5 - 97.3), oldITLErr: []int64{},
				reqPath: ms(2), handlerLag: ms(3), hasHandlerLag: true,
				delivery: []int64{ms(0.4)}, stampLag: []int64{ms(0.2)}, newConn: true,
			}, true},
		{"more chunks than events", prober.Result{Sent: at(0), FirstToken: at(102.5), Events: client.Events[:1]}, stamped, sample{}, false},
		{"no token chunk", prober.Result{Sent: at(0)}, `{"arrived_unix_nano":1,"chunks":[{"offset_nanos":1,"unix_nano":2,"tokens":0}]}`, sample{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := truthOf(t, tc.truth)
			got, ok := compare(&tc.r, &tr)
			if ok != tc.wantOK {
				t.Fatalf("compare ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sample{})); diff != "" {
				t.Errorf("compare (-want +got):\n%s", diff)
			}
			if !ok {
				return
			}
			// The decomposition adds up on the wall clock.
			if got.ttftErr != got.reqPath+got.delivery[0] {
				t.Errorf("TTFT error %d != request path %d + first delivery %d", got.ttftErr, got.reqPath, got.delivery[0])
			}
			for i, e := range got.itlErr {
				if e != got.delivery[i+1]-got.delivery[i] {
					t.Errorf("ITL error %d = %d, want the deliveries' difference %d", i, e, got.delivery[i+1]-got.delivery[i])
				}
			}
		})
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestStaggerOffsets(t *testing.T) {
	for _, tc := range []struct {
		n int
		d time.Duration
	}{{1, time.Second}, {10, 590 * time.Millisecond}, {1000, 590 * time.Millisecond}, {4000, 3 * time.Millisecond}} {
		got := staggerOffsets(tc.n, tc.d, 1)
		if len(got) != tc.n {
			t.Fatalf("staggerOffsets(%d, %v) has %d offsets", tc.n, tc.d, len(got))
		}
		for i, o := range got {
			lo, hi := tc.d*time.Duration(i)/time.Duration(tc.n), tc.d*time.Duration(i+1)/time.Duration(tc.n)
			if o < lo || (o >= hi && hi > lo) || (hi == lo && o != lo) {
				t.Errorf("staggerOffsets(%d, %v)[%d] = %v, want in its slot [%v, %v)", tc.n, tc.d, i, o, lo, hi)
			}
		}
		if again := staggerOffsets(tc.n, tc.d, 1); !cmp.Equal(got, again) {
			t.Errorf("staggerOffsets(%d, %v) differs between calls with one seed", tc.n, tc.d)
		}
	}
	// Within the slots the draw spreads the phases of a 10 ms period:
	// 1,000 evenly spaced starts over 590 ms would sit on 50 phases.
	phases := map[time.Duration]bool{}
	for _, o := range staggerOffsets(1000, 590*time.Millisecond, 1) {
		phases[(o%(10*time.Millisecond))/(100*time.Microsecond)] = true
	}
	if len(phases) < 90 {
		t.Errorf("1,000 staggered starts cover %d of 100 phase bins of 10 ms, want nearly all", len(phases))
	}
}

func TestMeasuredRequests(t *testing.T) {
	d := 590 * time.Millisecond
	for _, tc := range []struct {
		atLeast, minSamples, n int
		d, budget              time.Duration
		want                   int
	}{
		{2, 200, 10, d, 15 * time.Second, 20},
		{2, 200, 100, d, 15 * time.Second, 2},
		{2, 200, 1000, d, 15 * time.Second, 2},
		{2, 200, 3, d, 15 * time.Second, 25},  // the budget caps 67
		{30, 200, 3, d, 15 * time.Second, 30}, // never below the asked minimum
		{1, 0, 10, d, 15 * time.Second, 1},
		{2, 200, 10, 0, 15 * time.Second, 20},
	} {
		if got := measuredRequests(tc.atLeast, tc.minSamples, tc.n, tc.d, tc.budget); got != tc.want {
			t.Errorf("measuredRequests(%d, %d, %d, %v, %v) = %d, want %d", tc.atLeast, tc.minSamples, tc.n, tc.d, tc.budget, got, tc.want)
		}
	}
}

func TestGCPauses(t *testing.T) {
	var before, after runtime.MemStats
	before.NumGC, after.NumGC = 300, 303
	after.PauseNs[300%256] = 5e5 // the 301st collection
	after.PauseNs[301%256] = 2e6
	after.PauseNs[302%256] = 1e5
	after.PauseNs[299%256] = 9e9 // before the window
	if n, longest := gcPauses(&before, &after); n != 3 || longest != 2*time.Millisecond {
		t.Errorf("gcPauses = %d, %v; want 3, 2ms", n, longest)
	}
	if n, longest := gcPauses(&after, &after); n != 0 || longest != 0 {
		t.Errorf("gcPauses with no collection = %d, %v; want 0, 0", n, longest)
	}
}
