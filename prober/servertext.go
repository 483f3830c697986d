package prober

// Text a server sends passes config's sanitizer (Redactor.Sanitize,
// RedactJSON, Label) before it is kept, shown or used as a label; what is
// left here maps server values onto closed sets.

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
