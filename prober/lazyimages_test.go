package prober

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servingprobe/servingprobe/datasets"
	"github.com/servingprobe/servingprobe/tokenizer"
)

// TestRunMakesLazyImages: an image prompt holds its images lazily (the
// prompt set keeps none); Run makes them for its request, and the body
// sent carries them.
func TestRunMakesLazyImages(t *testing.T) {
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	o := datasets.DefaultOptions()
	o.RandomInputLen, o.RandomOutputLen, o.ImageResolution, o.ImageCount = 8, 4, "56x56", 2
	ds, err := datasets.New("image", o, tok)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ds.Generate(1, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	p := &Prober{
		Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body, _ = io.ReadAll(r.Body)
			return nil, errors.New("no server")
		})},
		Backend: openAIChat{},
		Options: RequestOptions{BaseURL: "http://llm.test", Model: "m", Stream: true},
	}
	p.Run(t.Context(), ps[0], time.Now())
	if n := bytes.Count(body, []byte(`"url":"data:image/jpeg;base64,`)); n != 2 {
		t.Errorf("the request carries %d images, want 2:\n%.300s", n, body)
	}
	if ps[0].Images != nil {
		t.Error("the prompt set now holds the images")
	}
	if strings.Contains(string(body), `"image_url":null`) {
		t.Error("an image part without its image")
	}
}
