package simulator

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	_ "image/jpeg" // the image dataset's formats
	_ "image/png"
	"strings"

	"github.com/servingprobe/servingprobe/datasets"
)

// imageTokens is the prompt tokens of the images among a message's
// content parts, counted as vLLM and sglang count a Qwen2-VL model's:
// from each image's size (datasets.Qwen2VLImageTokens), read from the
// header of its data URL. An image by http(s) URL counts 0: the
// simulator fetches nothing. An image it cannot read is refused, as an
// engine refuses one it cannot decode.
func imageTokens(raw json.RawMessage) (int, *apiError) {
	if len(raw) == 0 || raw[0] != '[' {
		return 0, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return 0, badRequest("message content must be a string or a list of parts")
	}
	n := 0
	for _, p := range parts {
		if p.Type != "image_url" || p.ImageURL == nil || !strings.HasPrefix(p.ImageURL.URL, "data:") {
			continue
		}
		h, w, err := dataURLSize(p.ImageURL.URL)
		if err != nil {
			return 0, badRequest("image_url: %v", err)
		}
		n += datasets.Qwen2VLImageTokens(h, w)
	}
	return n, nil
}

// imageDataTokens is imageTokens for sglang's image_data, beside a
// /generate text or a completions prompt: one data URL or a list of them.
func imageDataTokens(raw json.RawMessage) (int, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var urls []string
	if err := json.Unmarshal(raw, &urls); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return 0, badRequest("image_data must be a string or a list of strings")
		}
		urls = []string{one}
	}
	n := 0
	for _, u := range urls {
		if !strings.HasPrefix(u, "data:") {
			continue
		}
		h, w, err := dataURLSize(u)
		if err != nil {
			return 0, badRequest("image_data: %v", err)
		}
		n += datasets.Qwen2VLImageTokens(h, w)
	}
	return n, nil
}

// dataURLSize reads the height and width of a base64 data URL's image
// from its header alone.
func dataURLSize(u string) (h, w int, err error) {
	_, data, ok := strings.Cut(u, ";base64,")
	if !ok {
		return 0, 0, errBadDataURL
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil {
		return 0, 0, err
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return 0, 0, errBadDataURL
	}
	return cfg.Height, cfg.Width, nil
}

var errBadDataURL = errors.New("not a base64 data URL of an image")
