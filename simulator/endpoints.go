package simulator

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// writeError answers with the protocol's error body: vLLM's ErrorResponse for
// the OpenAI endpoints and truss, sglang's {"error":{"message"}} for
// /generate, Triton's {"error":"..."} for TensorRT-LLM.
func (s *Server) writeError(w http.ResponseWriter, ep Endpoint, rec *record, e *apiError) {
	var body []byte
	switch ep {
	case EndpointGenerate:
		body, _ = json.Marshal(map[string]any{"error": map[string]string{"message": e.message}})
	case EndpointTRT, EndpointOllama, EndpointOllamaChat:
		body, _ = json.Marshal(map[string]string{"error": e.message})
	case EndpointMessages:
		// vLLM's anthropic entrypoint answers errors in Anthropic's shape.
		body, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": anthropicErrorType(e.status), "message": e.message}})
	default:
		type info struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    int     `json:"code"`
		}
		body, _ = json.Marshal(struct {
			Error info `json:"error"`
		}{info{Message: e.message, Type: errorType(e.status), Code: e.status}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
	if rec != nil {
		rec.add(ChunkBody, 0, len(body))
		rec.flushed(time.Now(), time.Time{})
	}
}

// anthropicErrorType is Anthropic's error type for a status (ollama's
// anthropic.NewError table).
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "PermissionDeniedError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	default:
		return "InternalServerError"
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// models answers GET /v1/models as vLLM does.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type permission struct {
		ID                 string  `json:"id"`
		Object             string  `json:"object"`
		Created            int64   `json:"created"`
		AllowCreateEngine  bool    `json:"allow_create_engine"`
		AllowSampling      bool    `json:"allow_sampling"`
		AllowLogprobs      bool    `json:"allow_logprobs"`
		AllowSearchIndices bool    `json:"allow_search_indices"`
		AllowView          bool    `json:"allow_view"`
		AllowFineTuning    bool    `json:"allow_fine_tuning"`
		Organization       string  `json:"organization"`
		Group              *string `json:"group"`
		IsBlocking         bool    `json:"is_blocking"`
	}
	type model struct {
		ID          string       `json:"id"`
		Object      string       `json:"object"`
		Created     int64        `json:"created"`
		OwnedBy     string       `json:"owned_by"`
		Root        string       `json:"root"`
		Parent      *string      `json:"parent"`
		MaxModelLen int          `json:"max_model_len"`
		Permission  []permission `json:"permission"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{
		ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen,
		Permission: []permission{{
			ID: "modelperm-" + s.newID(0), Object: "model_permission", Created: s.created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}}})
}

// tokenize answers vLLM's POST /tokenize with the ids the generation
// endpoints count: vLLM's defaults are add_special_tokens for a prompt, and
// for messages the chat template with the generation prompt, encoded without
// special tokens.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Prompt   *string `json:"prompt"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes)).Decode(&b); err != nil {
		s.writeError(w, EndpointCompletions, nil, badRequest("invalid JSON body: %v", err))
		return
	}
	var ids []int
	switch {
	case b.Prompt != nil:
		var err error
		if ids, err = s.tok.Encode(*b.Prompt, true); err != nil {
			s.writeError(w, EndpointCompletions, nil, badRequest("tokenize the prompt: %v", err))
			return
		}
	case len(b.Messages) > 0:
		msgs := make([]datasets.Message, len(b.Messages))
		for i, m := range b.Messages {
			t, e := messageText(m.Content)
			if e != nil {
				s.writeError(w, EndpointCompletions, nil, e)
				return
			}
			msgs[i] = datasets.Message{Role: m.Role, Content: t}
		}
		var e *apiError
		if ids, e = s.chatIDs(msgs); e != nil {
			s.writeError(w, EndpointCompletions, nil, e)
			return
		}
	default:
		s.writeError(w, EndpointCompletions, nil, badRequest("prompt or messages is required"))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int    `json:"count"`
		MaxModelLen int    `json:"max_model_len"`
		Tokens      []int  `json:"tokens"`
		TokenStrs   *[]int `json:"token_strs"`
	}{len(ids), s.cfg.MaxModelLen, ids, nil})
}

// detokenize answers vLLM's POST /detokenize by mapping ids onto the output
// vocabulary; it does not invert tokenize.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes)).Decode(&b); err != nil {
		s.writeError(w, EndpointCompletions, nil, badRequest("invalid JSON body: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Prompt string `json:"prompt"`
	}{detokenize(b.Tokens)})
}

// serverInfo answers sglang's GET /server_info, which bench_serving reads for
// the speculative accept length. sglang states avg_spec_accept_length only
// with speculative decoding on, and bench_serving prints "Accept length"
// only when it is there; the simulator's speculative decoding is several
// tokens per decode step (TokensPerChunk above 1), so it states it then
// alone.
func (s *Server) serverInfo(w http.ResponseWriter, _ *http.Request) {
	type state struct {
		AvgSpecAcceptLength *float64 `json:"avg_spec_accept_length,omitempty"`
	}
	var st state
	if s.cfg.TokensPerChunk > 1 {
		v := float64(s.cfg.TokensPerChunk)
		st.AvgSpecAcceptLength = &v
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path":           s.cfg.Model,
		"served_model_name":    s.cfg.Model,
		"max_running_requests": s.cfg.MaxRunningRequests,
		"internal_states":      []state{st},
	})
}

// embeddedTokenizer is servingprobe's name for the Qwen3 tokenizer built
// into the binary, the one the simulator counts prompts with. Naming it
// lets a bench find it without --tokenizer, as it finds a real sglang
// server's, and count prompts as the simulator does.
const embeddedTokenizer = tokenizer.DefaultName

// modelInfo answers sglang's GET /model_info, where bench_serving (and
// servingprobe bench) look for the tokenizer when --tokenizer is unset.
func (s *Server) modelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path":     s.cfg.Model,
		"tokenizer_path": embeddedTokenizer,
		"is_generation":  true,
	})
}

// truthHandler serves GET /debug/truth/{id}; ?wait=2s waits for a request
// still in flight (or not yet arrived) for up to that long.
func (s *Server) truthHandler(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.truth == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": errTruthDisabled.Error()})
		return
	}
	var (
		t   Truth
		err error
	)
	if ws := r.URL.Query().Get("wait"); ws != "" {
		d, perr := time.ParseDuration(ws)
		if perr != nil || d < 0 || d > time.Minute {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "wait must be a duration between 0s and 1m"})
			return
		}
		ctx, cancel := contextWithTimeout(r, d)
		defer cancel()
		t, err = s.truth.wait(ctx, id)
	} else if tt, ok := s.truth.get(id); ok {
		t = tt
	} else {
		err = errors.New("no finished request with this id in the ring")
	}
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, t)
}
