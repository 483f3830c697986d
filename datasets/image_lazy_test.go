package datasets_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/servingprobe/servingprobe/datasets"
)

// TestImageLazy: the image dataset's prompts hold no image until their
// request is built. A 1080p noise JPEG is about 3 MB as a data URI, and
// Generate used to make every prompt's images up front and keep them for
// the whole run (10,000 prompts, about 36 GB with long texts). Generating
// 40 prompts must now allocate far less than one image each, and each
// prompt makes the same images every time it is built, at its size.
func TestImageLazy(t *testing.T) {
	tok := qwen3(t)
	o := randomOpts("", 20, 8, 1.0)
	o.ImageResolution, o.ImageFormat, o.ImageContent, o.ImageCount = "1080p", "jpeg", "random", 1
	d := mustNew(t, "image", o, tok)
	one := datasets.ImageBytes("image", o) / 2 // one prompt's URIs, without the body's copy
	const n = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ps := generate(t, d, n, 1)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*one/8 {
		t.Errorf("Generate(%d) allocated %d bytes, want under %d (an eighth of an image a prompt): the images were made up front", n, alloc, n*one/8)
	}
	for i, p := range ps {
		if p.Images != nil || p.LazyImages == nil || len(p.LazyImages.Sizes) != 1 {
			t.Fatalf("prompt %d holds %d images, lazy %v; want none held and one to make", i, len(p.Images), p.LazyImages)
		}
	}
	built := func(p datasets.Prompt) string {
		t.Helper()
		q, err := p.WithImages()
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Images) != 1 {
			t.Fatalf("WithImages made %d images, want 1", len(q.Images))
		}
		return q.Images[0]
	}
	a, again, b := built(ps[0]), built(ps[0]), built(ps[1])
	if a != again {
		t.Error("the same prompt made different images")
	}
	if a == b {
		t.Error("two prompts made the same image (a server's image cache would answer)")
	}
	if ps[0].Images != nil {
		t.Error("WithImages kept the images in the prompt set")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "data:image/jpeg;base64,"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || format != "jpeg" || cfg.Height != 1080 || cfg.Width != 1920 {
		t.Errorf("image %s %dx%d (%v), want jpeg 1080x1920", format, cfg.Height, cfg.Width, err)
	}
	if got := uint64(len(a)); got > ps[0].LazyImages.Bytes() || got > one {
		t.Errorf("image of %d bytes, over its bound %d (ImageBytes %d)", got, ps[0].LazyImages.Bytes(), one)
	}
}

// TestImageURIBytesBound: the bound ImageBytes states holds for every
// format and content, at sizes from tiny to 1080p.
func TestImageURIBytesBound(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	tok := qwen3(t)
	resolutions := []string{"28x28", "360p", "1080p"}
	if datasets.RaceEnabled {
		// Encoding 1080p noise takes a minute under -race on a busy
		// machine; the whole run, without -race, takes it.
		resolutions = resolutions[:2]
	}
	for _, res := range resolutions {
		for _, f := range [][2]string{{"jpeg", "random"}, {"png", "random"}, {"jpeg", "blank"}, {"png", "blank"}} {
			o := randomOpts("", 4, 4, 1.0)
			o.ImageResolution, o.ImageFormat, o.ImageContent, o.ImageCount = res, f[0], f[1], 2
			p := generate(t, mustNew(t, "image", o, tok), 1, 3)[0]
			q, err := p.WithImages()
			if err != nil {
				t.Fatal(err)
			}
			got := uint64(len(q.Images[0]) + len(q.Images[1]))
			if bound := p.LazyImages.Bytes(); got > bound || 2*bound > datasets.ImageBytes("image", o) {
				t.Errorf("%s %s/%s: %d bytes of images, bound %d, ImageBytes %d", res, f[0], f[1], got, bound, datasets.ImageBytes("image", o))
			}
		}
	}
}

// TestImageLazyConcurrent: requests build their images at once, each
// with an encoder of its own from the pool; the images are the same as
// built one at a time (run with -race).
func TestImageLazyConcurrent(t *testing.T) {
	tok := qwen3(t)
	o := randomOpts("", 8, 4, 1.0)
	o.ImageResolution, o.ImageFormat, o.ImageCount = "56x84", "png", 2
	ps := generate(t, mustNew(t, "image", o, tok), 8, 5)
	want := make([][]string, len(ps))
	for i, p := range ps {
		q, err := p.WithImages()
		if err != nil {
			t.Fatal(err)
		}
		want[i] = q.Images
	}
	var wg sync.WaitGroup
	for range 4 {
		for i, p := range ps {
			wg.Go(func() {
				q, err := p.WithImages()
				if err != nil || !slices.Equal(q.Images, want[i]) {
					t.Errorf("prompt %d built at once: err %v, images differ %v", i, err, !slices.Equal(q.Images, want[i]))
				}
			})
		}
	}
	wg.Wait()
}
