package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// genValues are ((i*7919) mod 1013)/997 * scale, computed identically in
// Go and Python, so that NumPy's results on them can be compared bit for bit.
func genValues(n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64((i*7919)%1013) / 997.0 * scale
	}
	return out
}

func tenths() []float64 {
	out := make([]float64, 10)
	for i := range out {
		out[i] = 0.1
	}
	return out
}

// The expected values are NumPy 1.24.2's np.mean, np.median, np.std,
// np.percentile (p50, p90, p95, p99, p99.9) and np.sum, printed with repr.
// tenths shows the pairwise summation: NumPy's sum is exactly 1.0 where a
// sequential sum gives 0.9999999999999999, so its std is exactly 0.
func TestStatsMatchNumPy(t *testing.T) {
	t.Parallel()
	type want struct {
		Mean, Median, Std        float64
		P50, P90, P95, P99, P999 float64
		Sum                      float64
	}
	for _, tc := range []struct {
		name   string
		values []float64
		want   want
	}{
		{"quartet", []float64{1, 2, 3, 4}, want{2.5, 2.5, 1.118033988749895, 2.5, 3.7, 3.8499999999999996, 3.9699999999999998, 3.9970000000000003, 10}},
		{"wikipedia", []float64{15, 20, 35, 40, 50}, want{32, 35, 12.884098726725126, 35, 46, 48, 49.6, 49.96000000000001, 160}},
		{"tenths", tenths(), want{0.1, 0.1, 0, 0.1, 0.1, 0.1, 0.1, 0.1, 1}},
		{"even pair unsorted", []float64{0.3, 0.1}, want{0.2, 0.2, 0.09999999999999999, 0.2, 0.27999999999999997, 0.29, 0.298, 0.2998, 0.4}},
		{"single", []float64{0.25}, want{0.25, 0.25, 0, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}},
		{"1000 values (pairwise blocks and split)", genValues(1000, 1), want{
			0.5084112337011033, 0.5090270812437312, 0.29338709282712006,
			0.5090270812437312, 0.9138415245737213, 0.9649448345035105, 1.005025075225677, 1.0140431293881647,
			508.41123370110336,
		}},
		{"300 values in seconds", genValues(300, 0.001), want{
			0.0005121899030424607, 0.0005140421263791374, 0.0002932212101513381,
			0.0005140421263791374, 0.0009149448345035106, 0.0009690070210631896, 0.0010050351053159478, 0.001013442326980943,
			0.15365697091273822,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := append([]float64(nil), tc.values...)
			sortFloats(sorted)
			got := want{
				Mean: mean(tc.values), Median: median(sorted), Std: std(tc.values),
				P50: percentile(sorted, 50), P90: percentile(sorted, 90), P95: percentile(sorted, 95),
				P99: percentile(sorted, 99), P999: percentile(sorted, 99.9),
				Sum: pairwiseSum(tc.values),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("statistics differ from NumPy (-numpy +got):\n%s", diff)
			}
		})
	}
}

func TestComputeStats(t *testing.T) {
	t.Parallel()
	// Seconds in, milliseconds out, the list left in its order.
	in := []float64{0.004, 0.001, 0.003, 0.002}
	got := ComputeStats(in)
	want := Stats{Mean: 2.5, Median: 2.5, Std: 1.118033988749895, P90: 3.7, P95: 3.8499999999999996, P99: 3.9699999999999998, Max: 4}
	opt := cmp.Comparer(func(a, b float64) bool { return a == b || (a-b < 1e-12 && b-a < 1e-12) })
	if diff := cmp.Diff(want, got, opt); diff != "" {
		t.Errorf("ComputeStats(%v) (-want +got):\n%s", in, diff)
	}
	if in[0] != 0.004 {
		t.Errorf("computeStats sorted its input: %v", in)
	}
	if got := ComputeStats(nil); got != (Stats{}) {
		t.Errorf("ComputeStats(nil) = %+v, want zeros", got)
	}
}
