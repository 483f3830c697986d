package servermetrics

import (
	"os"
	"strings"
	"testing"
	"time"
)

func readProm(t *testing.T, name string, drop string) *Snapshot {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if drop == "" || !strings.Contains(l, drop) {
			keep = append(keep, l)
		}
	}
	s, err := Parse(strings.NewReader(strings.Join(keep, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEnergy: with the energy counter the joules are its increase summed
// over the GPUs (mJ to J: (0.5e6 + 0.75e6) / 1000 = 1250 J); without it
// the power gauges' total integrated over the samples by the trapezoid
// rule, labelled an estimate ((300 W + 700 W) / 2 over 2 s = 1000 J); an
// endpoint with neither family has no Energy at all.
func TestEnergy(t *testing.T) {
	t.Run("counter", func(t *testing.T) {
		start, end := readProm(t, "energy_dcgm_start.prom", ""), readProm(t, "energy_dcgm_end.prom", "")
		r := Compute(start, end, []Sample{{Offset: 0, Values: GaugeValues(start)}, {Offset: 2 * time.Second, Values: GaugeValues(end)}})
		if e := r.Energy; e == nil || e.Method != EnergyCounter || e.Joules != 1250 || e.GPUs != 2 {
			t.Errorf("energy %+v, want counter 1250 J over 2 GPUs", e)
		}
		if got := r.Energy.PerOutputToken(500); got != 2.5 {
			t.Errorf("per output token %v, want 2.5", got)
		}
		// No engine metrics, by design: said as such, not as an
		// endpoint that exposes nothing known.
		if r.Missing != GPUOnly {
			t.Errorf("a DCGM exporter's block says %q, want %q", r.Missing, GPUOnly)
		}
	})
	t.Run("power estimate", func(t *testing.T) {
		drop := DCGMEnergy
		start, end := readProm(t, "energy_dcgm_start.prom", drop), readProm(t, "energy_dcgm_end.prom", drop)
		r := Compute(start, end, []Sample{{Offset: 0, Values: GaugeValues(start)}, {Offset: 2 * time.Second, Values: GaugeValues(end)}})
		if e := r.Energy; e == nil || e.Method != EnergyPowerEstimate || e.Joules != 1000 || e.GPUs != 2 {
			t.Errorf("energy %+v, want power_estimate 1000 J over 2 GPUs", e)
		}
	})
	t.Run("counter fell", func(t *testing.T) {
		start, end := readProm(t, "energy_dcgm_end.prom", ""), readProm(t, "energy_dcgm_start.prom", "")
		r := Compute(start, end, nil)
		if e := r.Energy; e == nil || e.Method != "" || !strings.Contains(e.Missing, "fell during the run") {
			t.Errorf("energy %+v, want a missing reason", e)
		}
	})
	t.Run("no dcgm", func(t *testing.T) {
		s, err := Parse(strings.NewReader("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if r := Compute(s, s, nil); r.Energy != nil || r.Missing == GPUOnly {
			t.Errorf("energy %+v, missing %q on an engine endpoint, want nil, not a GPU exporter", r.Energy, r.Missing)
		}
	})
}
