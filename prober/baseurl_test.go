package prober

import "testing"

func TestNormalizeBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want, wantErr string }{
		{in: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000"},
		{in: "http://127.0.0.1:8000/", want: "http://127.0.0.1:8000"},
		{in: "http://host:11434/v1", want: "http://host:11434"},
		{in: "https://api.example.com/v1/", want: "https://api.example.com"},
		{in: "http://gw.example.com/llm/v1", want: "http://gw.example.com/llm"},
		{in: "http://host/v1beta", want: "http://host/v1beta"},
		{in: "127.0.0.1:30000", wantErr: `"127.0.0.1:30000": want an http(s) URL such as http://127.0.0.1:8000`},
		{in: "ftp://host", wantErr: `"ftp://host": want an http(s) URL such as http://127.0.0.1:8000`},
		{in: "http://host/?a=1", wantErr: `"http://host/?a=1": a base URL takes no query or fragment`},
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
