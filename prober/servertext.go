package prober

import (
	"fmt"

	"github.com/servingprobe/servingprobe/config"
)

// Text a server sends is checked against a closed shape before it is kept,
// shown or used as a label: a server that echoes its request headers would
// otherwise put the prober's credentials into the model label of every
// series, the landing page and the logs.

// MaxModelIDBytes bounds a model id taken from a server (GET /v1/models).
// Hugging Face ids ("org/name") are at most 96 characters; a local path
// that vLLM or llama.cpp serves under its own name fits too.
const MaxModelIDBytes = 128

// modelIDByte reports whether c may appear in a model id from a server:
// letters, digits and . _ - : / @ + (org/name, name:tag, paths, versions).
// No space, no quote, no '=' and no ',': an echoed header
// ("Authorization: Bearer ...", "key=value") fails, and so does markup.
func modelIDByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', '-', ':', '/', '@', '+':
		return true
	}
	return false
}

// CheckModelID returns an error when id, sent by a server as a model name,
// does not have the shape of one (MaxModelIDBytes of modelIDByte), or
// holds one of red's secrets. The error never quotes id: it is not known
// to be safe to show. A nil red checks the shape only.
func CheckModelID(id string, red *config.Redactor) error {
	if id == "" {
		return fmt.Errorf("an empty model id")
	}
	if len(id) > MaxModelIDBytes {
		return fmt.Errorf("a model id of %d bytes (at most %d)", len(id), MaxModelIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if !modelIDByte(id[i]) {
			return fmt.Errorf("a model id with byte %d not a letter, digit or one of . _ - : / @ +", i)
		}
	}
	if red.Redact(id) != id {
		return fmt.Errorf("a model id that holds a configured credential (the server echoes request headers)")
	}
	return nil
}

// Finish reasons as the protocols send them. Anything else is FinishOther.
const FinishOther = "other"

// finishReasons is the closed set a Result's FinishReason takes: OpenAI
// (stop, length, tool_calls, function_call, content_filter), vLLM and
// lmdeploy (abort, error), Anthropic (end_turn, max_tokens, stop_sequence,
// tool_use, pause_turn, refusal), TGI (eos_token, stop_sequence), ollama
// (done, load, unload) and the Responses API's incomplete reasons.
var finishReasons = map[string]bool{
	"stop": true, "length": true, "tool_calls": true, "function_call": true, "content_filter": true,
	"abort": true, "error": true,
	"end_turn": true, "max_tokens": true, "stop_sequence": true, "tool_use": true, "pause_turn": true, "refusal": true,
	"eos_token": true, "done": true, "load": true, "unload": true,
}

// FinishReasonOf maps a server's finish reason onto the closed set:
// known reasons as they are, "" as "", anything else FinishOther. What a
// server writes there is shown in the history, the probe output and debug
// logs, so it must not carry what the server chose to echo.
func FinishReasonOf(s string) string {
	if s == "" || finishReasons[s] {
		return s
	}
	return FinishOther
}
