package prober

import (
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

func TestNormalizeBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want, wantErr string }{
		{in: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000"},
		{in: "http://127.0.0.1:8000/", want: "http://127.0.0.1:8000"},
		{in: "http://host:11434/v1", want: "http://host:11434"},
		{in: "https://api.example.com/v1/", want: "https://api.example.com"},
		{in: "http://gw.example.com/llm/v1", want: "http://gw.example.com/llm"},
		{in: "http://host/v1beta", want: "http://host/v1beta"},
		// The rule and its words are config's (a target's url is checked
		// by the same function); a flag's value is quoted, redacted.
		{in: "127.0.0.1:30000", wantErr: `"127.0.0.1:30000": missing scheme, write http://127.0.0.1:30000`},
		{in: "ftp://host", wantErr: `"ftp://host": scheme must be http or https, got "ftp"`},
		{in: "http://host/?a=1", wantErr: `"http://host/?a=1": must not contain a query or fragment: paths are appended to a base URL; send an API key as a header (http_client_config)`},
		{in: "http://host/?api_key=sk-1", wantErr: `"http://host/?api_key=xxxxx": must not contain a query or fragment: paths are appended to a base URL; send an API key as a header (http_client_config)`},
		{in: "http://u:pw@[::1/", wantErr: `"<unparseable URL>": not a valid URL (missing ']' in host)`},
	} {
		got, err := NormalizeBaseURL(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("NormalizeBaseURL(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("NormalizeBaseURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestOllamaAPIBaseURL: ollama's documentation gives its base URL as
// http://localhost:11434/api, under which its native routes sit
// (/api/generate, /api/chat) and its OpenAI routes do not (/v1/models is
// at the root). Before, such a base URL made requests go to /api/api/chat
// and the ready check wait on /api/v1/models (both 404).
func TestOllamaAPIBaseURL(t *testing.T) {
	for _, name := range []string{"ollama", "ollama-chat"} {
		info, err := LookupBackend(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []string{"http://h:11434/api", "http://h:11434/api/", "http://h:11434"} {
			base, err := info.BaseURL(raw)
			if err != nil || base != "http://h:11434" {
				t.Errorf("%s: BaseURL(%q) = %q, %v; want http://h:11434", name, raw, base, err)
			}
			if got := info.ReadyURL(raw); got != "http://h:11434/v1/models" {
				t.Errorf("%s: ReadyURL(%q) = %q, want http://h:11434/v1/models", name, raw, got)
			}
			req, err := info.New().NewRequest(RequestOptions{BaseURL: strings.TrimRight(raw, "/"), Model: "m", Stream: true}, datasets.Prompt{Text: "hi", OutputLen: 1})
			if err != nil {
				t.Fatal(err)
			}
			if want := "http://h:11434" + info.Path; req.URL.String() != want {
				t.Errorf("%s: base %q posts to %s, want %s", name, raw, req.URL, want)
			}
		}
	}
	// Elsewhere /api is a path prefix like any other (a gateway's).
	info, _ := LookupBackend("vllm-chat")
	if base, _ := info.BaseURL("http://gw/api"); base != "http://gw/api" {
		t.Errorf("vllm-chat: BaseURL(http://gw/api) = %q, want it kept", base)
	}
}
