package prober

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/config"
)

const plantedKey = "sk-PLANTED-model-77aa"

var keyRedactor = (*config.Redactor)(nil).WithHeaders(map[string]string{"Authorization": "Bearer " + plantedKey})

func TestFinishReasonOf(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"stop":                      "stop",
		"length":                    "length",
		"end_turn":                  "end_turn",
		"max_tokens":                "max_tokens",
		"abort":                     "abort",
		"Authorization=Bearer sk-x": FinishOther,
		"STOP":                      FinishOther,
		strings.Repeat("x", 1000):   FinishOther,
	} {
		if got := FinishReasonOf(in); got != want {
			t.Errorf("FinishReasonOf(%.40q) = %q, want %q", in, got, want)
		}
	}
}

// TestDetectModelRefusesEcho: a server whose /v1/models echoes the request's
// credentials, as a model id or in an error body, yields no model and an
// error that shows neither the id nor the key; ids not shaped like model
// names are left out of the several-models message.
func TestDetectModelRefusesEcho(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		wantModel  string
		wantErr    string
	}{
		{"header as id", `{"data":[{"id":"Authorization=Bearer ` + plantedKey + `"}]}`, 200, "", "holds a configured credential"},
		{"not an id", `{"data":[{"id":"Authorization=Bearer x"}]}`, 200, "", "not a letter, digit"},
		{"key as id", `{"data":[{"id":"` + plantedKey + `"}]}`, 200, "", "holds a configured credential"},
		// The key minus two characters, and the key \u-escaped in the JSON
		// (it decodes to the key itself).
		{"near key as id", `{"data":[{"id":"` + plantedKey[:len(plantedKey)-2] + `"}]}`, 200, "", "holds a configured credential"},
		{"escaped key as id", `{"data":[{"id":"\u0073k-PLANTED-model-77aa"}]}`, 200, "", "holds a configured credential"},
		{"escaped 401 echo", `{"error":"you sent \u0073k-PLANTED\u002dmodel-77aa"}`, 401, "", `you sent <secret>`},
		{"401 echo", "unauthorized; you sent Authorization: Bearer " + plantedKey, 401, "", "Authorization: <secret>"},
		{"echo among several", `{"data":[{"id":"good-model"},{"id":"` + plantedKey + `"},{"id":"x y"}]}`, 200, "good-model", "3 models (good-model and 2 more, 2 of them not shaped like model ids)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			m, err := DetectModelWithHeaders(t.Context(), srv.Client(), srv.URL, map[string]string{"Authorization": "Bearer " + plantedKey}, keyRedactor)
			if m != tc.wantModel || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DetectModel = %q, %v; want %q and an error saying %q", m, err, tc.wantModel, tc.wantErr)
			}
			if strings.Contains(err.Error(), "PLANTED") {
				t.Errorf("the error shows the key: %v", err)
			}
			var several *SeveralModelsError
			if tc.wantModel != "" && !errors.As(err, &several) {
				t.Errorf("err = %T, want a SeveralModelsError", err)
			}
		})
	}
}
