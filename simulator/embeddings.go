package simulator

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// embeddingDims is the length of the simulator's embedding vectors (the
// smallest common size, all-minilm's and bge-small's).
const embeddingDims = 384

// embeddings answers POST /v1/embeddings as vLLM and ollama do: one JSON
// object with one embedding per input and the server's prompt count, after
// the prefill an input of that length takes (TTFT's model: the base time,
// the time per prompt token and the jitter). It has no faults or history:
// the route generates nothing for them to act on.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes)).Decode(&b); err != nil {
		s.writeError(w, EndpointEmbeddings, nil, badRequest("invalid JSON body: %v", err))
		return
	}
	if e := s.checkModel(b.Model); e != nil {
		s.writeError(w, EndpointEmbeddings, nil, e)
		return
	}
	var texts []string
	var ids []int
	var text string
	switch {
	case json.Unmarshal(b.Input, &text) == nil:
		texts = []string{text}
	case json.Unmarshal(b.Input, &texts) == nil && len(texts) > 0:
	case json.Unmarshal(b.Input, &ids) == nil && len(ids) > 0:
	default:
		s.writeError(w, EndpointEmbeddings, nil, badRequest("input must be a string, a list of strings or a list of token ids"))
		return
	}
	n, count := max(len(texts), 1), len(ids)
	for _, t := range texts {
		c, e := s.countText(t)
		if e != nil {
			s.writeError(w, EndpointEmbeddings, nil, e)
			return
		}
		count += c
	}
	if count > s.cfg.MaxModelLen {
		s.writeError(w, EndpointEmbeddings, nil, badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", s.cfg.MaxModelLen, count))
		return
	}
	rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(count)))
	t := time.NewTimer(s.cfg.ttft(rng, count))
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return
	case <-t.C:
	}
	out := append([]byte(nil), `{"id":"embd-sim","object":"list","created":`...)
	out = strconv.AppendInt(out, time.Now().Unix(), 10)
	out = append(out, `,"model":`...)
	out = appendJSONString(out, s.cfg.Model)
	out = append(out, `,"data":[`...)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"object":"embedding","embedding":[`...)
		for j := range embeddingDims {
			if j > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendFloat(out, rng.Float64()*2-1, 'f', 6, 64)
		}
		out = append(out, "]}"...)
	}
	out = append(out, `],"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(count), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(count), 10)
	out = append(out, `,"completion_tokens":0,"prompt_tokens_details":null}}`...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
