package tokenizer

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeEngine answers /tokenize and /detokenize as vLLM documents them (or
// SGLang, whose /detokenize returns "text"), backed by a real tokenizer.
func fakeEngine(t *testing.T, tok *Tokenizer, sglang bool) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model            string `json:"model"`
			Prompt           string `json:"prompt"`
			AddSpecialTokens *bool  `json:"add_special_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.AddSpecialTokens == nil || req.Model != "m" {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		ids, _ := tok.Encode(req.Prompt, *req.AddSpecialTokens)
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 4096})
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		s, err := tok.Decode(req.Tokens, false)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := "prompt"
		if sglang {
			key = "text"
		}
		json.NewEncoder(w).Encode(map[string]any{key: s})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestServer(t *testing.T) {
	local, err := Load("testdata/metaspace-legacy")
	if err != nil {
		t.Fatal(err)
	}
	for _, sglang := range []bool{false, true} {
		srv := fakeEngine(t, local, sglang)
		s := NewServer(srv.Client(), srv.URL+"/", "m")
		for _, text := range []string{"the server", "", "你好 [INST]"} {
			for _, add := range []bool{false, true} {
				want, _ := local.Encode(text, add)
				got, err := s.Encode(text, add)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Encode(%q, %v) (-want +got):\n%s", text, add, diff)
				}
				dec, err := s.Decode(got, false)
				wantDec, _ := local.Decode(got, false)
				if err != nil || dec != wantDec {
					t.Errorf("Decode(%v) = %q, %v, want %q", got, dec, err, wantDec)
				}
			}
		}
		if got := s.NumSpecialTokensToAdd(); got != 1 {
			t.Errorf("NumSpecialTokensToAdd() = %d, want 1", got)
		}
		if got := s.MaxModelLen(); got != 4096 {
			t.Errorf("MaxModelLen() = %d, want 4096", got)
		}
		var se *StatusError
		if _, err := s.Decode([]int{1 << 30}, false); !errors.As(err, &se) || se.Code != http.StatusBadRequest {
			t.Errorf("Decode(bad id) error = %v, want *StatusError 400", err)
		}
	}
	bad := NewServer(nil, "http://127.0.0.1:1", "")
	if _, err := bad.Encode("x", false); err == nil {
		t.Error("Encode against a closed port succeeded")
	}
}
