package prober

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/servingprobe/servingprobe/config"
)

// CheckName names an answer check. It is a closed enum: it is used as a
// Prometheus label value, so only the names below ever become one.
type CheckName string

// The answer checks a module can run (config.AnswerChecks), in the order
// they are evaluated and reported.
const (
	CheckJSONSchema           CheckName = "json_schema"
	CheckToolCall             CheckName = "tool_call"
	CheckRegex                CheckName = "regex"
	CheckContains             CheckName = "contains"
	CheckEquals               CheckName = "equals"
	CheckNoReasoningInContent CheckName = "no_reasoning_in_content"
)

// CheckNames lists every CheckName in evaluation order.
var CheckNames = []CheckName{CheckJSONSchema, CheckToolCall, CheckRegex, CheckContains, CheckEquals, CheckNoReasoningInContent}

// CheckOutcome is how one check judged one answer; a closed enum too.
type CheckOutcome string

// The outcomes of a check.
const (
	// CheckPass: the answer is right by this check.
	CheckPass CheckOutcome = "pass"
	// CheckFail: the answer is wrong by this check.
	CheckFail CheckOutcome = "fail"
	// CheckError: the answer could not be judged: its JSON or its tool
	// call was cut at the requested length (finish reason "length"), so
	// whether the rest would have closed it is unknown; raise output_len.
	// A cut structure is not counted as wrong, so that a short output_len
	// does not page. (A golden answer cut short is wrong: it did not come
	// within the length asked for.)
	CheckError CheckOutcome = "error"
)

// CheckOutcomes lists every CheckOutcome, so that the exporter can create
// every series when the config loads.
var CheckOutcomes = []CheckOutcome{CheckPass, CheckFail, CheckError}

// maxCheckReason bounds a check's reason, which quotes a part of the
// answer: the history keeps it, and the answer can be long.
const maxCheckReason = 200

// CheckResult is one check's verdict on one answer.
type CheckResult struct {
	Check  CheckName    `json:"check"`
	Result CheckOutcome `json:"result"`
	// Reason says why the check failed or could not judge, quoting at
	// most a short part of the answer; empty on a pass. Never a label.
	Reason string `json:"reason,omitzero"`
}

// ToolCall is one tool call of an answer, assembled from the stream's
// fragments: OpenAI's streamed shape sends the id and the function name
// in the call's first delta and the arguments as string fragments in the
// following ones, each with the call's index (vLLM's and sglang's tool
// parsers stream it so); a non-streamed message carries whole calls.
type ToolCall struct {
	ID        string `json:"id,omitzero"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is one fragment of a tool call, as one event carries it.
type ToolCallDelta struct {
	// Index is the call's index among the answer's calls; -1 when the
	// server sent none (a whole call in a non-streamed message, or
	// ollama's), which appends a new call.
	Index     int
	ID        string
	Name      string
	Arguments string
}

// appendToolCalls adds an event's fragments to the calls so far: a
// fragment with an index extends the call of that index (creating it),
// one without starts a new call.
func appendToolCalls(calls []ToolCall, frags []ToolCallDelta) []ToolCall {
	for _, f := range frags {
		i := f.Index
		if i < 0 || i > len(calls)+maxToolCalls {
			i = len(calls)
		}
		for len(calls) <= i {
			calls = append(calls, ToolCall{})
		}
		c := &calls[i]
		if f.ID != "" {
			c.ID = f.ID
		}
		c.Name += f.Name
		c.Arguments += f.Arguments
	}
	return calls
}

// maxToolCalls bounds how far past the calls so far an index may point, so
// that a hostile index cannot make Run allocate a huge slice.
const maxToolCalls = 64

// Checker runs a module's answer checks. It is immutable once built and
// safe for concurrent use (compiled schemas and regexps are).
type Checker struct {
	checks   []CheckName
	schema   *jsonschema.Schema // nil: json_schema checks that the answer parses
	tools    map[string]*jsonschema.Schema
	regex    *regexp.Regexp
	contains string
	equals   string
}

// NewChecker compiles a module's checks: the response_format's schema,
// the tools' parameter schemas and the regex. It returns nil and no error
// when the module checks nothing.
func NewChecker(m config.Module) (*Checker, error) {
	c := m.Checks
	if !c.Any() {
		return nil, nil
	}
	k := &Checker{checks: ModuleCheckNames(c), contains: c.Contains, equals: c.Equals}
	if c.JSONSchema {
		if js, ok := m.ResponseFormat["json_schema"].(map[string]any); ok {
			s, err := compileSchema(js["schema"])
			if err != nil {
				return nil, fmt.Errorf("response_format.json_schema.schema: %w", err)
			}
			k.schema = s
		}
	}
	if c.ToolCall {
		k.tools = map[string]*jsonschema.Schema{}
		for i, t := range m.Tools {
			tm, _ := t.(map[string]any)
			fn, _ := tm["function"].(map[string]any)
			name, _ := fn["name"].(string)
			var s *jsonschema.Schema
			if params, ok := fn["parameters"]; ok {
				var err error
				if s, err = compileSchema(params); err != nil {
					return nil, fmt.Errorf("tools[%d].function.parameters: %w", i, err)
				}
			}
			k.tools[name] = s
		}
	}
	if c.Regex != "" {
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return nil, fmt.Errorf("checks.regex: %w", err)
		}
		k.regex = re
	}
	return k, nil
}

// ModuleCheckNames lists the checks c sets, in CheckNames order: the
// label values of a module's answer-check series, created when the config
// loads.
func ModuleCheckNames(c config.AnswerChecks) []CheckName {
	var out []CheckName
	for _, n := range CheckNames {
		on := map[CheckName]bool{
			CheckJSONSchema: c.JSONSchema, CheckToolCall: c.ToolCall, CheckRegex: c.Regex != "",
			CheckContains: c.Contains != "", CheckEquals: c.Equals != "", CheckNoReasoningInContent: c.NoReasoningInContent,
		}[n]
		if on {
			out = append(out, n)
		}
	}
	return out
}

// compileSchema compiles one JSON Schema given as a decoded JSON value.
// Remote references are refused: a schema that names a URL would make
// every probe fetch it.
func compileSchema(v any) (*jsonschema.Schema, error) {
	// Round-trip through JSON so that numbers are what the library expects.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource("module.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("module.json")
}

// CheckSchema returns why schema does not compile as the checks compile
// it (compileSchema), or nil: config's check of a module's schemas
// (ConfigChecks), so that a load reports it at its line.
func CheckSchema(schema map[string]any) error {
	_, err := compileSchema(schema)
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		// Its first line names the schema's made-up resource (under the
		// working directory); the metaschema's findings are the lines
		// under it, the innermost of each saying what is wrong.
		return errors.New(schemaFindings(se.Err.Error()))
	}
	return err
}

// schemaFindings are the innermost lines of a jsonschema validation
// error's tree ("at '/type': got string, want array"), joined with "; ":
// the lines followed by none indented deeper.
func schemaFindings(tree string) string {
	lines := strings.Split(tree, "\n")
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	var out []string
	for i, l := range lines {
		if i == 0 || strings.TrimSpace(l) == "" {
			continue
		}
		if i+1 < len(lines) && indent(lines[i+1]) > indent(l) {
			continue
		}
		out = append(out, strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	if len(out) == 0 {
		return tree
	}
	return strings.Join(out, "; ")
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external schema references are not loaded")
}

// Names lists the checks k runs, in evaluation order.
func (k *Checker) Names() []CheckName {
	if k == nil {
		return nil
	}
	return k.checks
}

// Check judges one request's answer. It is pure: a function of the
// Result's answer text, reasoning, tool calls and finish reason. A failed
// request has no answer to judge and gets no verdicts (requests_total
// counts it); so does a module without checks.
func (k *Checker) Check(r *Result) []CheckResult {
	if k == nil || r.Outcome != OutcomeSuccess {
		return nil
	}
	out := make([]CheckResult, 0, len(k.checks))
	cut := r.FinishReason == "length"
	for _, name := range k.checks {
		res, why := CheckPass, ""
		switch name {
		case CheckJSONSchema:
			res, why = k.checkJSON(r.Answer, cut)
		case CheckToolCall:
			res, why = k.checkToolCalls(r.ToolCalls, cut)
		case CheckRegex:
			if !k.regex.MatchString(r.Answer) {
				res, why = CheckFail, "no match for the regex in "+quoteShort(r.Answer)
			}
		case CheckContains:
			if !strings.Contains(r.Answer, k.contains) {
				res, why = CheckFail, "the expected text is not in "+quoteShort(r.Answer)
			}
		case CheckEquals:
			if strings.TrimSpace(r.Answer) != strings.TrimSpace(k.equals) {
				res, why = CheckFail, "the answer is "+quoteShort(r.Answer)
			}
		case CheckNoReasoningInContent:
			res, why = checkNoReasoning(r)
		}
		// A structure cut at the requested length cannot be judged: the
		// rest might have closed it. A golden answer is not cut short so:
		// one that did not come within the length asked for is wrong, as
		// is reasoning that took the whole length.
		if res == CheckFail && cut && (name == CheckJSONSchema || name == CheckToolCall) {
			res, why = CheckError, "answer cut at the requested length: "+why
		}
		out = append(out, CheckResult{Check: name, Result: res, Reason: TruncateUTF8(why, maxCheckReason)})
	}
	return out
}

func (k *Checker) checkJSON(answer string, cut bool) (CheckOutcome, string) {
	text := stripCodeFence(answer)
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		if cut {
			return CheckError, "answer cut at the requested length before the JSON ended"
		}
		return CheckFail, "not JSON: " + err.Error() + " in " + quoteShort(answer)
	}
	if k.schema == nil {
		return CheckPass, ""
	}
	if err := k.schema.Validate(v); err != nil {
		return CheckFail, "does not validate: " + schemaError(err)
	}
	return CheckPass, ""
}

func (k *Checker) checkToolCalls(calls []ToolCall, cut bool) (CheckOutcome, string) {
	if len(calls) == 0 {
		if cut {
			return CheckError, "answer cut at the requested length before any tool call"
		}
		return CheckFail, "no tool call"
	}
	for i, c := range calls {
		s, ok := k.tools[c.Name]
		if !ok {
			return CheckFail, fmt.Sprintf("tool call %d names an undeclared tool %s", i, quoteShort(c.Name))
		}
		args := strings.TrimSpace(c.Arguments)
		if args == "" {
			args = "{}" // OpenAI's shape for a call without arguments
		}
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			if cut {
				return CheckError, fmt.Sprintf("tool call %d cut at the requested length", i)
			}
			return CheckFail, fmt.Sprintf("tool call %d (%s): arguments are not JSON: %v in %s", i, c.Name, err, quoteShort(c.Arguments))
		}
		if s != nil {
			if err := s.Validate(v); err != nil {
				return CheckFail, fmt.Sprintf("tool call %d (%s): arguments do not validate: %s", i, c.Name, schemaError(err))
			}
		}
	}
	return CheckPass, ""
}

// reasoningMarkers are the text of reasoning that a server without (or
// with a broken) reasoning parser leaves in the answer: DeepSeek-R1's and
// Qwen3's think tags, and the Harmony format's channel tokens (gpt-oss).
var reasoningMarkers = []string{thinkOpen, thinkClose, "<|channel|>", "<|start|>assistant", "<|message|>"}

func checkNoReasoning(r *Result) (CheckOutcome, string) {
	for _, m := range reasoningMarkers {
		if i := strings.Index(r.Answer, m); i >= 0 {
			return CheckFail, fmt.Sprintf("reasoning marker %q in the answer at byte %d", m, i)
		}
	}
	if strings.TrimSpace(r.Answer) == "" && len(r.ToolCalls) == 0 && r.ReasoningTokens > 0 {
		return CheckFail, fmt.Sprintf("empty answer; all %d output tokens were reasoning", r.ReasoningTokens)
	}
	return CheckPass, ""
}

// stripCodeFence takes the JSON out of a Markdown code fence, which models
// in json_object mode on some servers wrap it in; the JSON inside is what a
// client would parse.
func stripCodeFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return t
	}
	t = strings.TrimPrefix(t, "```")
	t = strings.TrimPrefix(t, "json")
	t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	return strings.TrimSpace(t)
}

// schemaError is a validation error's first cause, on one line: the full
// tree of a jsonschema error can run to many lines.
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		for len(ve.Causes) > 0 {
			ve = ve.Causes[0]
		}
		err = ve
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// quoteShort quotes the start of s, bounded, for a reason.
func quoteShort(s string) string {
	const n = 80
	if len(s) > n {
		return fmt.Sprintf("%q…", TruncateUTF8(s, n))
	}
	return fmt.Sprintf("%q", s)
}

// ModuleChecker refuses a module whose response_format, tools or checks
// are malformed (config.Module.AnswerProblems) or whose response_format or
// tools the backend has no field for (they would be dropped, and every
// check would judge an answer that was never asked for), then compiles its
// checks. The daemon's probes and a bench (bench/runner) both build theirs
// here.
func ModuleChecker(info BackendInfo, m config.Module) (*Checker, error) {
	if err := m.AnswerProblems(); err != nil {
		return nil, err
	}
	if m.ResponseFormat != nil && !info.ResponseFormat {
		return nil, fmt.Errorf("backend %s has no field for response_format", info.Name)
	}
	if len(m.Tools) > 0 && !info.Tools {
		return nil, fmt.Errorf("backend %s has no field for tools (use a chat backend)", info.Name)
	}
	return NewChecker(m)
}
