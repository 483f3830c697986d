package prober

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/servingprobe/servingprobe/datasets"
)

// openAIEmbeddings is /v1/embeddings, OpenAI's embeddings route as vLLM,
// sglang and ollama serve it (bench_serving's sglang-embedding and
// vllm-embedding backends, and openai-embeddings). The answer is one JSON
// object, never a stream: {"object":"list","data":[{"object":"embedding",
// "embedding":[...],"index":0}],"model":...,"usage":{"prompt_tokens":n,
// "total_tokens":n}} (ollama's openai.EmbeddingList, vLLM's
// EmbeddingResponse). Nothing is generated, so a request has an E2E
// latency and an input count, and no first token, TPOT or ITL.
type openAIEmbeddings struct{}

var _ Backend = openAIEmbeddings{}

func (b openAIEmbeddings) decodeMemo(ev SSEEvent, _ *scanMemo, d *Delta) error {
	return d.set(b.Decode(ev))
}

// pathEmbeddings is the embeddings endpoint.
const pathEmbeddings = "/v1/embeddings"

// embeddingsInput is "input": the prompt's batch of texts as a list (the
// embedding dataset's list rows), else its text, or its token ids when it
// has only ids (the route takes each).
func embeddingsInput(p datasets.Prompt) any {
	if p.Inputs != nil {
		return p.Inputs
	}
	if p.Text == "" && len(p.IDs) > 0 {
		return p.IDs
	}
	return p.Text
}

// NewRequest sends what bench_serving's async_request_openai_embeddings
// sends (sglang's python/sglang/benchmark/serving.py): the input and the
// model, a LoRA adapter as both the model and lora_path (sglang reads
// lora_path, vLLM the model), then the extra body (encoding_format,
// dimensions, vLLM's truncate_prompt_tokens...; the embedding dataset's
// other row keys come last, over those). One prompt is one request: one
// text or one list of ids, or, from the embedding dataset, a list of texts
// sent as the list, as bench_serving sends its row's "input" unchanged.
func (openAIEmbeddings) NewRequest(o RequestOptions, p datasets.Prompt) (*http.Request, error) {
	body := object{
		{"model", modelFor(o, p)},
		{"input", embeddingsInput(p)},
	}
	if p.LoRA != "" {
		body = append(body, field{"lora_path", p.LoRA})
	}
	o.Stream = false // the route answers with one object; asking for a stream would only change Accept
	return newJSONRequest(o, pathEmbeddings, body, p)
}

// embeddingsResponse is the part of the answer servingprobe reads: how many
// embeddings came back and the server's input count.
type embeddingsResponse struct {
	errorField
	Data []struct {
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// errNoEmbeddings is an answer that decodes but holds no embedding.
var errNoEmbeddings = errors.New("no embeddings in the response")

// Decode reads the whole answer. It ends the request (a finish reason of
// "stop": the route has no other) with the server's input count.
func (openAIEmbeddings) Decode(ev SSEEvent) (Delta, error) {
	var r embeddingsResponse
	if err := json.Unmarshal(ev.Data, &r); err != nil {
		return Delta{}, fmt.Errorf("decode embeddings response: %w", err)
	}
	if err := r.err(); err != nil {
		return Delta{}, err
	}
	if len(r.Data) == 0 {
		return Delta{}, errNoEmbeddings
	}
	d := Delta{FinishReason: "stop"}
	if r.Usage != nil && r.Usage.PromptTokens > 0 {
		d.Usage = Usage{PromptTokens: r.Usage.PromptTokens, Source: TokenSourceUsage}
	}
	return d, nil
}

func (openAIEmbeddings) framing() Framing { return Framing{NoOutput: true} }
