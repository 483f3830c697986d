package promtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestResultCountsNaN feeds a canned query_range response: NaN samples count
// as floats but not as values a panel can draw; NaN and infinite samples
// are not finite.
func TestResultCountsNaN(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		want       Result
		wantValues bool
		wantFinite bool
	}{
		{"only NaN", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"],[2,"NaN"]]}]}}`,
			Result{Series: 1, Floats: 2, NaN: 2}, false, false},
		{"NaN and a value", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"],[2,"0.25"]]}]}}`,
			Result{Series: 1, Floats: 2, NaN: 1}, true, false},
		{"Inf and a value", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"+Inf"],[2,"0.25"]]},{"metric":{"a":"b"},"values":[[1,"-Inf"]]}]}}`,
			Result{Series: 2, Floats: 3, Inf: 2}, true, false},
		{"only values", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"0"],[2,"0.25"]]}]}}`,
			Result{Series: 1, Floats: 2}, true, true},
		{"histogram", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"1","sum":"1"}]]}]}}`,
			Result{Series: 1, Histograms: 1}, true, true},
		{"empty", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, Result{}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer api.Close()
			s := &Server{URL: api.URL, client: api.Client(), log: &lockedBuffer{}}
			got, err := s.QueryRange(context.Background(), "x", time.Unix(1, 0), time.Unix(2, 0), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("QueryRange result (-want +got):\n%s", diff)
			}
			if got.HasValues() != tc.wantValues {
				t.Errorf("HasValues() = %v, want %v", got.HasValues(), tc.wantValues)
			}
			if got.Finite() != tc.wantFinite {
				t.Errorf("Finite() = %v, want %v", got.Finite(), tc.wantFinite)
			}
		})
	}
}
