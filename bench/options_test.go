package bench

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCompat(t *testing.T) {
	t.Parallel()
	all := Compat{true, true, true, true, true, true, true, true, true, true, true}
	for _, tc := range []struct {
		in      string
		want    Compat
		wantErr bool
	}{
		{"", Compat{}, false},
		{"all", all, false},
		{"chunk-itl", Compat{ChunkITL: true}, false},
		{" chunk-itl , bucket-concurrency,chunk-itl", Compat{ChunkITL: true, BucketConcurrency: true}, false},
		{"new-connection,no-usage,server-info-duration,random-lengths,all-failed-error",
			Compat{NewConnection: true, NoUsage: true, ServerInfoDuration: true, RandomLengths: true, AllFailedError: true}, false},
		{"chunk-itl,bogus", Compat{}, true},
	} {
		got, err := ParseCompat(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseCompat(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseCompat(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if err != nil {
			continue
		}
		// String parses back to the same set.
		if back, err := ParseCompat(got.String()); err != nil || back != got {
			t.Errorf("ParseCompat(%q.String() = %q) = %+v, %v; want %+v", tc.in, got.String(), back, err, got)
		}
	}
	if got := all.String(); got != "all" {
		t.Errorf("all.String() = %q, want all", got)
	}
	if !all.Has(CompatChunkITL) || (Compat{}).Has(CompatChunkITL) || all.Has("bogus") {
		t.Errorf("Has gives wrong answers")
	}
}

// Every Compat field has exactly one named option, so the list printed in
// --help and docs/bench.md cannot fall out of step with the struct.
func TestCompatOptionsCoverEveryField(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeFor[Compat]().NumField(); n != len(CompatOptions) {
		t.Fatalf("Compat has %d fields but %d CompatOptions", n, len(CompatOptions))
	}
	seen := map[string]bool{}
	for _, o := range CompatOptions {
		var c Compat
		f := c.field(o.Name)
		if f == nil || seen[o.Name] || o.Description == "" {
			t.Errorf("option %q: field %v, duplicate %v, description %q", o.Name, f != nil, seen[o.Name], o.Description)
			continue
		}
		seen[o.Name] = true
		*f = true
		if got := c.Names(); len(got) != 1 || got[0] != o.Name {
			t.Errorf("setting %q gives Names() = %v", o.Name, got)
		}
	}
}

func TestParseGoodput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      []string
		want    Goodput
		wantErr bool
	}{
		{nil, Goodput{}, false},
		{[]string{"ttft:500", "tpot:50.5", "e2el:0"}, Goodput{"ttft": 500, "tpot": 50.5, "e2el": 0}, false},
		{[]string{"ttft"}, nil, true},
		{[]string{"itl:5"}, nil, true},
		{[]string{"ttft:-1"}, nil, true},
		{[]string{"ttft:abc"}, nil, true},
		{[]string{"ttft:NaN"}, nil, true},
		{[]string{"ttft:inf"}, nil, true},
	} {
		got, err := ParseGoodput(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseGoodput(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseGoodput(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParsePercentiles(t *testing.T) {
	t.Parallel()
	m, err := ParsePercentileMetrics("ttft, tpot,itl,ttft,e2el_including_client_queue")
	if diff := cmp.Diff([]string{"ttft", "tpot", "itl", "e2el_including_client_queue"}, m); err != nil || diff != "" {
		t.Errorf("ParsePercentileMetrics() = %v, %v (-want +got):\n%s", m, err, diff)
	}
	if _, err := ParsePercentileMetrics("ttft,e2e"); err == nil {
		t.Errorf("ParsePercentileMetrics(e2e): error = nil, want an error")
	}
	p, err := ParseMetricPercentiles("25, 99.9,100,0")
	if diff := cmp.Diff([]float64{25, 99.9, 100, 0}, p); err != nil || diff != "" {
		t.Errorf("ParseMetricPercentiles() = %v, %v (-want +got):\n%s", p, err, diff)
	}
	for _, bad := range []string{"101", "-1", "x", "NaN"} {
		if _, err := ParseMetricPercentiles(bad); err == nil {
			t.Errorf("ParseMetricPercentiles(%q): error = nil, want an error", bad)
		}
	}
	for p, want := range map[float64]string{99: "99", 99.9: "99.9", 50: "50", 0.5: "0.5"} {
		if got := percentileWord(p); got != want {
			t.Errorf("percentileWord(%v) = %q, want %q", p, got, want)
		}
	}
}

func TestRateJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   Rate
		want string
	}{{Rate(math.Inf(1)), `"inf"`}, {50, `50`}, {0.5, `0.5`}} {
		b, err := json.Marshal(tc.in)
		if err != nil || string(b) != tc.want {
			t.Errorf("json.Marshal(Rate(%v)) = %s, %v; want %s", float64(tc.in), b, err, tc.want)
		}
		var back Rate
		if err := json.Unmarshal(b, &back); err != nil || back != tc.in {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", b, float64(back), err, float64(tc.in))
		}
	}
	var r Rate
	if err := json.Unmarshal([]byte(`"Infinity"`), &r); err != nil || !math.IsInf(float64(r), 1) {
		t.Errorf(`json.Unmarshal("Infinity") = %v, %v; want +Inf`, float64(r), err)
	}
	if err := json.Unmarshal([]byte(`"fast"`), &r); err == nil {
		t.Errorf(`json.Unmarshal("fast"): error = nil, want an error`)
	}
}
