package prober

import (
	"encoding/json"
)

// The module's response_format, tools and tool_choice are written in
// OpenAI's shape (config.Module). The OpenAI routes of vLLM, sglang and
// ollama take that shape as it is; the native APIs have fields of their
// own, which the functions below map it to, so that a module means the
// same on every backend that can carry it (BackendInfo.ResponseFormat and
// BackendInfo.Tools say which can).

// openAIAnswerFields are response_format, tools and tool_choice, sent as
// written (chat; completions take response_format only, tools false).
func openAIAnswerFields(o RequestOptions, tools bool) object {
	var f object
	if o.ResponseFormat != nil {
		f = append(f, field{"response_format", o.ResponseFormat})
	}
	if tools && len(o.Tools) > 0 {
		f = append(f, field{"tools", o.Tools})
		if o.ToolChoice != nil {
			f = append(f, field{"tool_choice", o.ToolChoice})
		}
	}
	return f
}

// responseSchema is the JSON Schema a response_format asks for: its
// json_schema.schema, or any object for json_object (as sglang's OpenAI
// adapter maps json_object onto its grammar); nil for text or none.
func responseSchema(rf map[string]any) any {
	switch rf["type"] {
	case "json_schema":
		js, _ := rf["json_schema"].(map[string]any)
		return js["schema"]
	case "json_object":
		return map[string]any{"type": "object"}
	}
	return nil
}

// ollamaFormat is ollama's "format": "json" for json_object, the schema
// itself for json_schema (ollama compiles it to a grammar); nil for none.
func ollamaFormat(rf map[string]any) any {
	switch rf["type"] {
	case "json_schema":
		return responseSchema(rf)
	case "json_object":
		return "json"
	}
	return nil
}

// sglangJSONSchema is sglang's /generate sampling_params.json_schema: the
// schema as a JSON string, as its OpenAI adapter passes it on; "" for none.
func sglangJSONSchema(rf map[string]any) string {
	s := responseSchema(rf)
	if s == nil {
		return ""
	}
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}
