package simulator

import (
	"encoding/json"
	"sort"
	"strconv"
)

// toolCall is the call the simulator answers a chat request that declares
// tools with: the first declared function, called with arguments made from
// its parameters' schema (every required property, a value of its type), so
// that a well-formed call validates against what the client declared. The
// malformed-tool-call fault cuts the arguments' closing brace, as a model
// whose tool parser gave up mid-call leaves them.
type toolCall struct {
	name string
	args string
	// frags are what each token chunk carries, in order: the first the
	// call's head (id, type, name), the others pieces of args, as vLLM's
	// tool parsers stream a call (its first delta names the function, the
	// arguments follow as string fragments with the call's index).
	frags []string
}

// chatTool is one entry of a chat request's tools.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// newToolCall returns the call for tools, nil when there is none to call
// (no function declared, or tool_choice "none").
func newToolCall(tools []chatTool, choice json.RawMessage) *toolCall {
	if string(choice) == `"none"` {
		return nil
	}
	for _, t := range tools {
		if t.Type == "function" && t.Function.Name != "" {
			return &toolCall{name: t.Function.Name, args: exampleArguments(t.Function.Parameters)}
		}
	}
	return nil
}

// exampleArguments is a JSON object holding every required property of
// schema with a value of its declared type.
func exampleArguments(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	args := map[string]any{}
	req := append([]string(nil), s.Required...)
	sort.Strings(req)
	for _, name := range req {
		p := s.Properties[name]
		if len(p.Enum) > 0 {
			args[name] = p.Enum[0]
			continue
		}
		typ, _ := p.Type.(string)
		if l, ok := p.Type.([]any); ok && len(l) > 0 {
			typ, _ = l[0].(string)
		}
		switch typ {
		case "integer", "number":
			args[name] = 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		case "null":
			args[name] = nil
		default:
			args[name] = "sample"
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// toolFragBytes is the size of one streamed argument fragment: about a
// token's worth of JSON.
const toolFragBytes = 4

// plan cuts the call into per-token fragments for the request id; with
// malformed the arguments lose their last byte (the closing brace).
func (c *toolCall) plan(id string, malformed bool) {
	args := c.args
	if malformed && len(args) > 0 {
		args = args[:len(args)-1]
	}
	head := `{"id":"chatcmpl-tool-` + id + `","type":"function","index":0,"function":{"name":` + strconv.Quote(c.name) + `}}`
	c.frags = append(c.frags[:0], head)
	for i := 0; i < len(args); i += toolFragBytes {
		piece := args[i:min(i+toolFragBytes, len(args))]
		q, _ := json.Marshal(piece)
		c.frags = append(c.frags, `{"index":0,"function":{"arguments":`+string(q)+`}}`)
	}
}
