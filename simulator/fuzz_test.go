package simulator

import (
	"testing"
)

// FuzzParse feeds arbitrary bodies to every request parser: none may panic,
// and an accepted request must be servable (non-negative lengths within the
// context limit).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"hi","max_tokens":3}`,
		`{"prompt":[1,2,3],"max_tokens":3,"min_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":2}`,
		`{"text":"hi","sampling_params":{"max_new_tokens":0}}`,
		`{"input_ids":[1,2],"sampling_params":{"max_new_tokens":-1}}`,
		`{"text_input":"hi","max_tokens":1,"end_id":-5}`,
		`{"prompt":[[1,2]],"n":1}`,
		`null`, `[]`, `{"prompt":null}`,
	} {
		f.Add([]byte(seed))
	}
	s := newServer(f, fastConfig())
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, parse := range map[string]func([]byte) (genRequest, *apiError){
			"completions": s.parseCompletions,
			"chat":        s.parseChat,
			"generate":    s.parseGenerate,
			"trt":         func(b []byte) (genRequest, *apiError) { return s.parseTRT(b, "m", true) },
		} {
			req, e := parse(body)
			if e != nil {
				if e.status < 400 || e.message == "" {
					t.Errorf("%s(%q): error %+v", name, body, e)
				}
				continue
			}
			if req.promptTokens < 0 || req.maxTokens < 0 || req.maxTokens > s.cfg.MaxModelLen-req.promptTokens {
				t.Errorf("%s(%q) accepted %+v", name, body, req)
			}
		}
	})
}
