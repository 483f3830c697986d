package servermetrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The NVIDIA DCGM exporter's energy and power metrics, as
// NVIDIA/dcgm-exporter etc/default-counters.csv declares them:
//
//	DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (in W).
//	DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
//
// Both carry one series per GPU (labels gpu, UUID, Hostname...).
const (
	DCGMEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	DCGMPower  = "DCGM_FI_DEV_POWER_USAGE"
)

// Energy methods: the energy counter's increase, or the power gauge
// integrated over the samples (an estimate: the power between two samples
// is taken as their mean).
const (
	EnergyCounter       = "counter"
	EnergyPowerEstimate = "power_estimate"
)

// GPUPower is the key under which a Sample holds the GPUs' total power
// draw in watts, when the endpoint is a DCGM exporter.
const GPUPower Kind = "gpu_power_watts"

// GPUReading is one read of the DCGM exporter's families, per GPU.
type GPUReading struct {
	// EnergyMJ is each GPU's energy counter (mJ since boot); PowerW each
	// GPU's power draw (W).
	EnergyMJ map[string]float64
	PowerW   map[string]float64
}

// Energy is the GPUs' energy over a run.
type Energy struct {
	// Method is EnergyCounter or EnergyPowerEstimate; "" when Missing.
	Method string
	// Joules is summed over the GPUs.
	Joules float64
	GPUs   int
	// Missing says why there is no number.
	Missing string
}

// gpuKey names a series' GPU: its UUID, else its host and index.
func gpuKey(m *dto.Metric) string {
	var uuid, gpu, host string
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "UUID", "uuid":
			uuid = l.GetValue()
		case "gpu":
			gpu = l.GetValue()
		case "Hostname", "hostname":
			host = l.GetValue()
		}
	}
	if uuid != "" {
		return uuid
	}
	return host + "/" + gpu
}

// readDCGM takes a DCGM family into s.GPU; it reports whether the family
// was one.
func readDCGM(s *Snapshot, name string, mf *dto.MetricFamily) bool {
	if name != DCGMEnergy && name != DCGMPower {
		return false
	}
	if s.GPU == nil {
		s.GPU = &GPUReading{EnergyMJ: map[string]float64{}, PowerW: map[string]float64{}}
	}
	dst := s.GPU.PowerW
	if name == DCGMEnergy {
		dst = s.GPU.EnergyMJ
	}
	for _, m := range mf.GetMetric() {
		var v float64
		switch {
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		if finite(v) {
			dst[gpuKey(m)] = v
		}
	}
	return true
}

// addGPUPower puts the GPUs' total power draw into a sample's values.
func addGPUPower(s *Snapshot, v map[Kind]float64) {
	if s.GPU == nil || len(s.GPU.PowerW) == 0 {
		return
	}
	var w float64
	for _, p := range s.GPU.PowerW {
		w += p
	}
	v[GPUPower] = w
}

// computeEnergy is the GPUs' energy between two reads: the energy
// counter's increase summed over the GPUs present in both, else the total
// power integrated over the samples by the trapezoid rule. Nil when the
// endpoint exposes neither family (it is no DCGM exporter).
func computeEnergy(start, end *Snapshot, samples []Sample) *Energy {
	if start.GPU == nil && end.GPU == nil {
		return nil
	}
	e := &Energy{}
	if start.GPU != nil && end.GPU != nil && len(end.GPU.EnergyMJ) > 0 {
		var mj float64
		var fell []string
		n := 0
		for _, k := range slices.Sorted(maps.Keys(end.GPU.EnergyMJ)) {
			s0, ok := start.GPU.EnergyMJ[k]
			if !ok {
				continue
			}
			d := end.GPU.EnergyMJ[k] - s0
			if d < 0 {
				fell = append(fell, k)
				continue
			}
			mj += d
			n++
		}
		if len(fell) > 0 {
			e.Missing = fmt.Sprintf("%s fell during the run on %s (the GPU or the exporter restarted)", DCGMEnergy, strings.Join(fell, ", "))
			return e
		}
		if n > 0 {
			e.Method, e.Joules, e.GPUs = EnergyCounter, mj/1000, n
			return e
		}
	}
	var pts []Sample
	for _, s := range samples {
		if _, ok := s.Values[GPUPower]; ok {
			pts = append(pts, s)
		}
	}
	if len(pts) < 2 {
		e.Missing = fmt.Sprintf("neither %s nor two samples of %s in the run", DCGMEnergy, DCGMPower)
		return e
	}
	var j float64
	for i := 1; i < len(pts); i++ {
		dt := (pts[i].Offset - pts[i-1].Offset).Seconds()
		j += (pts[i].Values[GPUPower] + pts[i-1].Values[GPUPower]) / 2 * dt
	}
	gpus := 0
	if end.GPU != nil {
		gpus = len(end.GPU.PowerW)
	}
	e.Method, e.Joules, e.GPUs = EnergyPowerEstimate, j, gpus
	return e
}

// PerOutputToken is joules per output token; NaN when there is no
// number or no token.
func (e *Energy) PerOutputToken(tokens int) float64 {
	if e == nil || e.Method == "" || tokens <= 0 {
		return math.NaN()
	}
	return e.Joules / float64(tokens)
}
