package datasets

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"strings"
	"testing"
)

func decodeDataURI(t *testing.T, uri string) []byte {
	t.Helper()
	b64, ok := strings.CutPrefix(uri, "data:image/jpeg;base64,")
	if !ok {
		t.Fatalf("not a JPEG data URI: %.40s", uri)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNoiseJPEG: the pooled-MCU frames are valid JPEGs of the requested
// size, noisy in every MCU, distinct, and as large as image/jpeg's own
// encoding of noise (the server must receive and decode as much).
func TestNoiseJPEG(t *testing.T) {
	e, err := newImageEncoder("jpeg", "random")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for _, sz := range [][2]int{{1080, 1920}, {17, 33}, {16, 16}, {1, 1}, {720, 1280}} {
		h, w := sz[0], sz[1]
		uri, err := e.dataURI(h, w, r)
		if err != nil {
			t.Fatal(err)
		}
		b := decodeDataURI(t, uri)
		if seen[string(b)] {
			t.Errorf("%dx%d: the same bytes as an earlier frame", h, w)
		}
		seen[string(b)] = true
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%dx%d: image/jpeg cannot decode it: %v", h, w, err)
		}
		if got := img.Bounds(); got != image.Rect(0, 0, w, h) {
			t.Errorf("decoded bounds %v, want %dx%d", got, w, h)
		}
		// Noise everywhere: in every full 16x16 MCU the luma varies.
		yc, ok := img.(*image.YCbCr)
		if !ok {
			t.Fatalf("decoded %T, want *image.YCbCr", img)
		}
		for y0 := 0; y0+16 <= h; y0 += 16 {
			for x0 := 0; x0+16 <= w; x0 += 16 {
				lo, hi := byte(255), byte(0)
				for y := y0; y < y0+16; y++ {
					for x := x0; x < x0+16; x++ {
						v := yc.Y[yc.YOffset(x, y)]
						lo, hi = min(lo, v), max(hi, v)
					}
				}
				if hi-lo < 64 {
					t.Fatalf("%dx%d: MCU at (%d,%d) is flat (luma %d..%d)", h, w, x0, y0, lo, hi)
				}
			}
		}
		if h == 1080 {
			// image/jpeg's own encoding of full-frame noise, for size.
			ref := image.NewRGBA(image.Rect(0, 0, w, h))
			for i := range ref.Pix {
				ref.Pix[i] = byte(r.Uint32())
			}
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, ref, &jpeg.Options{Quality: noiseQuality}); err != nil {
				t.Fatal(err)
			}
			if ratio := float64(len(b)) / float64(buf.Len()); ratio < 0.8 || ratio > 1.25 {
				t.Errorf("1080p noise frame is %d bytes, image/jpeg's noise %d (ratio %.2f, want 0.8..1.25)", len(b), buf.Len(), ratio)
			}
		}
	}
}

func BenchmarkNoiseJPEG1080p(b *testing.B) {
	e, err := newImageEncoder("jpeg", "random")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		if _, err := e.dataURI(1080, 1920, r); err != nil {
			b.Fatal(err)
		}
	}
}
