package simulator

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/servingprobe/servingprobe/tokenizer"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"default", func(*Config) {}, ""},
		{"many problems at once", func(c *Config) {
			c.Model, c.TokensPerChunk, c.ITL, c.Jitter = "", 0, -time.Second, "triangle"
		}, `itl: must not be negative, got -1s
jitter: must be "uniform" or "normal", got "triangle"
model: must be set
tokens_per_chunk: must be at least 1, got 0`},
		{"fault rates", func(c *Config) {
			c.FaultRates = map[Fault]float64{Fault500: 0.7, Fault503: 0.6, "boom": 0.1}
		}, `fault_rates: probabilities sum to 1.2999999999999998, more than 1
fault_rates: unknown fault "boom"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFaultRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		fault   Fault
		p       float64
		wantErr string
	}{
		{"500:0.01", Fault500, 0.01, ""},
		{"reset-mid-stream:1", FaultResetMidStream, 1, ""},
		{"500", "", 0, "want name:probability"},
		{"teapot:0.1", "", 0, `unknown fault "teapot"`},
		{"500:1.5", "", 0, "in [0, 1]"},
		{"500:NaN", "", 0, "in [0, 1]"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, p, err := ParseFaultRate(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseFaultRate(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || f != tc.fault || p != tc.p {
				t.Errorf("ParseFaultRate(%q) = %q, %v, %v; want %q, %v", tc.in, f, p, err, tc.fault, tc.p)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		mutate func(*Config)
	}{
		{"defaults", nil, func(*Config) {}},
		{"all set", []string{
			"--sim.model=m", "--sim.ttft=100ms", "--sim.itl=0s", "--sim.itl-jitter=2ms", "--sim.prefill-per-token=1us",
			"--sim.tokens-per-chunk=4", "--sim.max-running-requests=0", "--sim.coalesce", "--sim.seed=9",
			"--sim.fault-rate=500:0.01", "--sim.fault-rate=reset-mid-stream:0.5", "--no-sim.header-faults",
			"--sim.jitter-distribution=normal", "--sim.truth-size=7",
		}, func(c *Config) {
			c.Model, c.TTFT, c.ITL, c.ITLJitter, c.PrefillPerToken = "m", 100*time.Millisecond, 0, 2*time.Millisecond, time.Microsecond
			c.TokensPerChunk, c.MaxRunningRequests, c.Coalesce, c.Seed = 4, 0, true, 9
			c.FaultRates = map[Fault]float64{Fault500: 0.01, FaultResetMidStream: 0.5}
			c.HeaderFaults, c.Jitter, c.TruthSize = false, Normal, 7
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := kingpin.New("test", "")
			cmd := app.Command("simulate", "")
			got := AddFlags(cmd)
			if _, err := app.Parse(append([]string{"simulate"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			want := DefaultConfig()
			want.FaultRates = map[Fault]float64{}
			tc.mutate(&want)
			if diff := cmp.Diff(want, *got); diff != "" {
				t.Errorf("parsed config (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestOutputLen(t *testing.T) {
	c := DefaultConfig()
	c.MeanOutputTokens = 10
	for _, tc := range []struct {
		name     string
		max, min int
		ignore   bool
		wantN    int // -1: drawn
		wantEOS  bool
	}{
		{"ignore_eos", 50, 0, true, 50, false},
		{"min covers max", 50, 50, false, 50, false},
		{"zero max", 0, 0, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, eos := c.outputLen(rand.New(rand.NewPCG(1, 2)), tc.max, tc.min, tc.ignore)
			if n != tc.wantN || eos != tc.wantEOS {
				t.Errorf("outputLen(%d, %d, %v) = %d, %v; want %d, %v", tc.max, tc.min, tc.ignore, n, eos, tc.wantN, tc.wantEOS)
			}
		})
	}
	t.Run("geometric", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		sum, draws := 0, 20000
		for range draws {
			n, eos := c.outputLen(r, 1<<20, 3, false)
			if n < 3 || !eos {
				t.Fatalf("draw %d, eos %v: below min_tokens or not EOS", n, eos)
			}
			sum += n
		}
		// Mean of max(3, Geometric(1/10)) is a little over 10.
		if mean := float64(sum) / float64(draws); mean < 9.5 || mean > 11 {
			t.Errorf("mean output length = %v, want about 10", mean)
		}
	})
}

func TestJitterBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var lo, hi time.Duration
	for range 10000 {
		j := jitter(r, time.Millisecond, Uniform)
		lo, hi = min(lo, j), max(hi, j)
	}
	if lo < -time.Millisecond || hi > time.Millisecond || lo > -900*time.Microsecond || hi < 900*time.Microsecond {
		t.Errorf("uniform jitter range [%v, %v], want to fill [-1ms, 1ms]", lo, hi)
	}
	c := DefaultConfig()
	c.TTFT, c.TTFTJitter, c.Jitter = time.Millisecond, time.Hour, Normal
	for range 1000 {
		if d := c.ttft(r, 0); d < 0 {
			t.Fatalf("ttft = %v, want clamped at 0", d)
		}
	}
}

func TestTokens(t *testing.T) {
	for i, w := range vocab {
		if !strings.HasPrefix(w, " ") || strings.Count(w, " ") != 1 || strings.ContainsAny(w, "\"\\\n") {
			t.Errorf("vocab[%d] = %q: want one leading space and nothing to escape", i, w)
		}
	}
	// Each output token is one token of the tokenizer the simulator names,
	// alone and joined, so that a client counting the text gets the count
	// the simulator reports.
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range vocab {
		if n, _ := tok.Count(w); n != 1 {
			t.Errorf("vocab[%d] = %q is %d tokens, want 1", i, w, n)
		}
	}
	if n, _ := tok.Count(strings.Join(vocab[:], "")); n != len(vocab) {
		t.Errorf("the vocabulary joined is %d tokens, want %d", n, len(vocab))
	}
}

func TestAppendJSONString(t *testing.T) {
	got := string(appendJSONString(nil, "a\"b\\c\nd\x01é"))
	if want := `"a\"b\\c\nd\u0001é"`; got != want {
		t.Errorf("appendJSONString = %s, want %s", got, want)
	}
}
