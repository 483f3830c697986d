package prober

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestEmbeddingsRequestBody: the embeddings body carries what
// bench_serving's embeddings request carries: the input and the model, a
// LoRA adapter as the model and as lora_path, and the extra body (here
// sglang's own test's encoding_format) last, replacing nothing it does not
// name.
func TestEmbeddingsRequestBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    RequestOptions
		p    datasets.Prompt
		want string
	}{
		{"text", RequestOptions{BaseURL: "http://e.test", Model: "m"}, datasets.Prompt{Text: "hello world"},
			`{"model":"m","input":"hello world"}`},
		{"ids", RequestOptions{BaseURL: "http://e.test", Model: "m"}, datasets.Prompt{IDs: []int{1, 2, 3}},
			`{"model":"m","input":[1,2,3]}`},
		{"lora and extra body", RequestOptions{BaseURL: "http://e.test", Model: "m", ExtraBody: map[string]any{"encoding_format": "base64"}},
			datasets.Prompt{Text: "hello world", LoRA: "adapter-a"},
			`{"model":"adapter-a","input":"hello world","lora_path":"adapter-a","encoding_format":"base64"}`},
		// The embedding dataset's list row: the list as "input", a list of
		// one kept a list, the row's own keys over --extra-request-body's
		// (bench_serving merges {**global, **row} into the payload).
		{"list", RequestOptions{BaseURL: "http://e.test", Model: "m"}, datasets.Prompt{Inputs: []string{"tea", "coffee"}},
			`{"model":"m","input":["tea","coffee"]}`},
		{"list of one", RequestOptions{BaseURL: "http://e.test", Model: "m"}, datasets.Prompt{Inputs: []string{"tea"}},
			`{"model":"m","input":["tea"]}`},
		{"list with row keys", RequestOptions{BaseURL: "http://e.test", Model: "m", ExtraBody: map[string]any{"encoding_format": "base64", "user": "global"}},
			datasets.Prompt{Inputs: []string{"a", "b"}, ExtraBody: map[string]any{"encoding_format": "float", "dimensions": json.Number("256")}},
			`{"model":"m","input":["a","b"],"encoding_format":"float","user":"global","dimensions":256}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := openAIEmbeddings{}.NewRequest(tc.o, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want || req.URL.Path != "/v1/embeddings" {
				t.Errorf("NewRequest(%+v) = %s %s, want /v1/embeddings %s", tc.p, req.URL.Path, b, tc.want)
			}
		})
	}
}
