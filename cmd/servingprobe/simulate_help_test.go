package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/servingprobe/servingprobe/simulator"
)

// TestSimulateHelpRoutes: `simulate --help` names each API the simulator
// serves, and each API it names has its route on the simulator (the
// simulator's mux answers an unknown route 404 and a known route with the
// wrong method 405; an empty body gets neither).
func TestSimulateHelpRoutes(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "--help")
	if code != 0 {
		t.Fatalf("simulate --help exited %d: %s", code, stderr)
	}
	help := strings.Join(strings.Fields(stdout+stderr), " ") // unwrapped
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		named  string // as the help names it
		method string
		path   string
	}{
		{"sglang's /generate", http.MethodPost, "/generate"},
		{"OpenAI's completions", http.MethodPost, "/v1/completions"},
		{"chat", http.MethodPost, "/v1/chat/completions"},
		{"Responses", http.MethodPost, "/v1/responses"},
		{"embeddings", http.MethodPost, "/v1/embeddings"},
		{"Anthropic's Messages", http.MethodPost, "/v1/messages"},
		{"ollama's /api/generate", http.MethodPost, "/api/generate"},
		{"/api/chat", http.MethodPost, "/api/chat"},
		{"TensorRT-LLM's generate", http.MethodPost, "/v2/models/m/generate"},
		{"generate_stream", http.MethodPost, "/v2/models/m/generate_stream"},
		{"truss", http.MethodPost, "/v1/models/m:predict"},
		{"/metrics in vLLM's or sglang's names", http.MethodGet, "/metrics"},
	} {
		if !strings.Contains(help, tc.named) {
			t.Errorf("the help does not name %q:\n%s", tc.named, stdout)
		}
		w := httptest.NewRecorder()
		sim.Handler().ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}")))
		if w.Code == http.StatusNotFound || w.Code == http.StatusMethodNotAllowed {
			t.Errorf("%s %s (%q in the help): %d, the simulator has no such route", tc.method, tc.path, tc.named, w.Code)
		}
	}
}
