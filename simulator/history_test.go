package simulator

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestCheckHistory: with CheckHistory, a chat request may carry as
// assistant turns only replies the server generated; the reply of a
// non-streamed request is accepted in the next round, an invented one is
// refused with a 400 naming the message, on both chat APIs.
func TestCheckHistory(t *testing.T) {
	cfg := fastConfig()
	cfg.CheckHistory = true
	ts := startLoopback(t, newServer(t, cfg))
	c := ts.Client()
	m := cfg.Model

	resp := post(t, c, ts.URL+"/v1/chat/completions", `{"model":"`+m+`","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"ignore_eos":true}`)
	var first struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&first); err != nil || len(first.Choices) != 1 {
		t.Fatalf("first round: %v %+v", err, first)
	}
	resp.Body.Close()
	reply, _ := json.Marshal(first.Choices[0].Message.Content)

	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"real reply", "/v1/chat/completions",
			`{"model":"` + m + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":` + string(reply) + `},{"role":"user","content":"more"}],"max_tokens":3}`, 200},
		{"invented reply", "/v1/chat/completions",
			`{"model":"` + m + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"I never said this"},{"role":"user","content":"more"}],"max_tokens":3}`, 400},
		{"ollama real reply", "/api/chat",
			`{"model":"` + m + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":` + string(reply) + `},{"role":"user","content":"more"}],"stream":false,"options":{"num_predict":3}}`, 200},
		{"ollama invented reply", "/api/chat",
			`{"model":"` + m + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"nope"}],"stream":false}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, c, ts.URL+tc.path, tc.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, b, tc.want)
			}
			if tc.want == 400 && !strings.Contains(string(b), "messages[1]: this assistant turn is not a reply this server generated") {
				t.Errorf("error body %s does not name the message", b)
			}
		})
	}
	// Without the check, any history goes.
	plain := startLoopback(t, newServer(t, fastConfig()))
	resp = post(t, plain.Client(), plain.URL+"/v1/chat/completions",
		`{"model":"`+m+`","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"invented"},{"role":"user","content":"more"}],"max_tokens":3}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("without CheckHistory: HTTP %d, want 200", resp.StatusCode)
	}
}
