package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Server is a tokenizer that asks the serving engine itself, through the
// /tokenize and /detokenize endpoints vLLM and SGLang expose:
//
//	POST /tokenize   {"model","prompt","add_special_tokens"} -> {"tokens":[...],"count":N,"max_model_len":M}
//	POST /detokenize {"model","tokens"}                      -> {"prompt":"..."} (vLLM) or {"text":"..."} (SGLang)
//
// It is exact for whatever the server runs, at the cost of one round trip
// per call. Methods use context.Background; use EncodeContext to bound them.
type Server struct {
	client  *http.Client
	baseURL string
	model   string

	// Learnt from the first response that carries them: the number of ids
	// add_special_tokens adds, and max_model_len.
	mu          sync.Mutex
	numSpecial  int
	numKnown    bool
	maxModelLen int
}

var _ Any = (*Server)(nil)

// NewServer returns a tokenizer for the server at baseURL (for example
// http://localhost:8000); model is sent as "model" and may be empty.
func NewServer(client *http.Client, baseURL, model string) *Server {
	if client == nil {
		client = http.DefaultClient
	}
	return &Server{client: client, baseURL: strings.TrimSuffix(baseURL, "/"), model: model}
}

type tokenizeRequest struct {
	Model            string `json:"model,omitempty"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

type tokenizeResponse struct {
	Tokens      []int `json:"tokens"`
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
}

type detokenizeRequest struct {
	Model  string `json:"model,omitempty"`
	Tokens []int  `json:"tokens"`
}

type detokenizeResponse struct {
	Prompt *string `json:"prompt"` // vLLM
	Text   *string `json:"text"`   // SGLang
}

// StatusError is a non-2xx answer from the server's tokenizer endpoints.
type StatusError struct {
	Endpoint string
	Code     int
	Body     string // first 512 bytes
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Endpoint, e.Code, e.Body)
}

func (s *Server) post(ctx context.Context, endpoint string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL+endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{Endpoint: endpoint, Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: decode response: %w", endpoint, err)
	}
	return nil
}

// EncodeContext is Encode bounded by ctx.
func (s *Server) EncodeContext(ctx context.Context, text string, addSpecialTokens bool) ([]int, error) {
	var r tokenizeResponse
	if err := s.post(ctx, "/tokenize", tokenizeRequest{Model: s.model, Prompt: text, AddSpecialTokens: addSpecialTokens}, &r); err != nil {
		return nil, err
	}
	if r.Tokens == nil {
		return nil, fmt.Errorf("/tokenize: response has no tokens")
	}
	if r.MaxModelLen > 0 {
		s.mu.Lock()
		s.maxModelLen = r.MaxModelLen
		s.mu.Unlock()
	}
	return r.Tokens, nil
}

// Encode implements Any.
func (s *Server) Encode(text string, addSpecialTokens bool) ([]int, error) {
	return s.EncodeContext(context.Background(), text, addSpecialTokens)
}

// DecodeContext is Decode bounded by ctx. The endpoints have no
// skip_special_tokens switch; special tokens are always kept.
func (s *Server) DecodeContext(ctx context.Context, ids []int) (string, error) {
	var r detokenizeResponse
	if err := s.post(ctx, "/detokenize", detokenizeRequest{Model: s.model, Tokens: ids}, &r); err != nil {
		return "", err
	}
	switch {
	case r.Prompt != nil:
		return *r.Prompt, nil
	case r.Text != nil:
		return *r.Text, nil
	}
	return "", fmt.Errorf("/detokenize: response has neither prompt nor text")
}

// Decode implements Any. skipSpecialTokens cannot be passed
// to the server and is ignored.
func (s *Server) Decode(ids []int, _ bool) (string, error) {
	return s.DecodeContext(context.Background(), ids)
}

// NumSpecialTokensToAdd asks the server once, by tokenizing the empty
// string with and without special tokens. It returns 0 if the server
// cannot be reached (the error surfaces on the next Encode).
func (s *Server) NumSpecialTokensToAdd() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.numKnown {
		return s.numSpecial
	}
	ctx := context.Background()
	with, err := s.encodeLocked(ctx, true)
	if err != nil {
		return 0
	}
	without, err := s.encodeLocked(ctx, false)
	if err != nil {
		return 0
	}
	s.numSpecial, s.numKnown = len(with)-len(without), true
	return s.numSpecial
}

func (s *Server) encodeLocked(ctx context.Context, add bool) ([]int, error) {
	var r tokenizeResponse
	err := s.post(ctx, "/tokenize", tokenizeRequest{Model: s.model, Prompt: "", AddSpecialTokens: add}, &r)
	return r.Tokens, err
}

// VocabSize is unknown to the tokenize endpoints; it returns 0, and
// datasets that sample random ids need a local tokenizer.
func (s *Server) VocabSize() int { return 0 }

// MaxModelLen is the server's max_model_len from the last /tokenize
// response, or 0.
func (s *Server) MaxModelLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxModelLen
}
