package datasets

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Resolution presets, width × height, as bench_serving names them.
var resolutionPresets = map[string][2]int{ // {height, width}
	"4k":    {2160, 3840},
	"1080p": {1080, 1920},
	"720p":  {720, 1280},
	"360p":  {360, 640},
}

// resolution is a fixed size or a range to draw from per image.
type resolution struct {
	minH, minW, maxH, maxW int
}

func (r resolution) draw(rng *rand.Rand) (h, w int) {
	h, w = r.minH, r.minW
	if r.maxH > r.minH {
		h += rng.IntN(r.maxH - r.minH + 1)
	}
	if r.maxW > r.minW {
		w += rng.IntN(r.maxW - r.minW + 1)
	}
	return h, w
}

// parseResolution reads a preset, a custom "HxW" (height first, the reverse
// of how the presets read) or "random:<minH>x<minW>-<maxH>x<maxW>".
func parseResolution(s string) (resolution, error) {
	if p, ok := resolutionPresets[s]; ok {
		return resolution{p[0], p[1], p[0], p[1]}, nil
	}
	if spec, ok := strings.CutPrefix(s, "random:"); ok {
		lo, hi, ok := strings.Cut(spec, "-")
		if ok {
			h0, w0, err0 := parseHxW(lo)
			h1, w1, err1 := parseHxW(hi)
			if err0 == nil && err1 == nil && h0 <= h1 && w0 <= w1 {
				return resolution{h0, w0, h1, w1}, nil
			}
		}
		return resolution{}, fmt.Errorf("image resolution %q: want random:<minH>x<minW>-<maxH>x<maxW> with min <= max", s)
	}
	h, w, err := parseHxW(s)
	if err != nil {
		return resolution{}, fmt.Errorf("image resolution %q: want 4k, 1080p, 720p, 360p, HxW or random:<minH>x<minW>-<maxH>x<maxW>", s)
	}
	return resolution{h, w, h, w}, nil
}

func parseHxW(s string) (h, w int, err error) {
	hs, ws, ok := strings.Cut(s, "x")
	if !ok {
		return 0, 0, errors.New("missing x")
	}
	if h, err = strconv.Atoi(hs); err != nil || h < 1 {
		return 0, 0, errors.New("bad height")
	}
	if w, err = strconv.Atoi(ws); err != nil || w < 1 {
		return 0, 0, errors.New("bad width")
	}
	return h, w, nil
}

// visionCounter counts vision tokens. We have no HF processor, so the rule
// is Qwen2-VL's, applied only when the tokenizer knows Qwen's vision tokens
// (see the package documentation); otherwise images count 0 tokens.
type visionCounter struct{ qwen bool }

func newVisionCounter(tok Tokenizer) visionCounter {
	single := func(s string) bool {
		ids, err := tok.Encode(s, false)
		return err == nil && len(ids) == 1
	}
	return visionCounter{qwen: single("<|vision_start|>") && single("<|image_pad|>") && single("<|vision_end|>")}
}

// Qwen2-VL preprocessor defaults (preprocessor_config.json): 14 px patches
// merged 2×2, min_pixels 56·56, max_pixels 12845056.
const (
	qwenFactor    = 28
	qwenMinPixels = 56 * 56
	qwenMaxPixels = 12845056
)

// tokens is Qwen2VLImageTokens for a tokenizer that knows Qwen's vision
// tokens, else 0.
func (v visionCounter) tokens(h, w int) int {
	if !v.qwen {
		return 0
	}
	return Qwen2VLImageTokens(h, w)
}

// Qwen2VLImageTokens is the prompt tokens an h×w image takes in a
// Qwen2-VL prompt: ⌊H'/28⌋·⌊W'/28⌋ image pads for the smart_resize'd
// H'×W' (14 px patches, merged 2×2: vLLM's
// vllm/model_executor/models/qwen2_vl.py, Qwen2VLProcessingInfo's
// _get_vision_info, divides the patch grid by merge_size²), plus the
// vision start and end tokens around them. The dataset's vision count
// and the simulator's prompt count both use it.
func Qwen2VLImageTokens(h, w int) int {
	hb, wb := qwenSmartResize(h, w)
	return (hb/qwenFactor)*(wb/qwenFactor) + 2
}

// qwenSmartResize mirrors transformers' Qwen2-VL smart_resize, including
// Python's round-half-to-even.
func qwenSmartResize(h, w int) (int, int) {
	f := float64(qwenFactor)
	fh, fw := float64(h), float64(w)
	hb := max(qwenFactor, int(math.RoundToEven(fh/f))*qwenFactor)
	wb := max(qwenFactor, int(math.RoundToEven(fw/f))*qwenFactor)
	switch {
	case hb*wb > qwenMaxPixels:
		beta := math.Sqrt(fh * fw / qwenMaxPixels)
		hb = max(qwenFactor, int(math.Floor(fh/beta/f))*qwenFactor)
		wb = max(qwenFactor, int(math.Floor(fw/beta/f))*qwenFactor)
	case hb*wb < qwenMinPixels:
		beta := math.Sqrt(qwenMinPixels / (fh * fw))
		hb = int(math.Ceil(fh*beta/f)) * qwenFactor
		wb = int(math.Ceil(fw*beta/f)) * qwenFactor
	}
	return hb, wb
}

// imageEncoder makes synthetic images, reusing its pixel and output
// buffers. It is not safe for concurrent use.
type imageEncoder struct {
	format string // jpeg or png
	blank  bool
	img    image.RGBA
	out    bytes.Buffer
	png    png.Encoder
	blanks map[[2]int]string // blank images depend only on size
	noise  *noiseJPEG        // random JPEGs, built on first use
	frame  []byte
}

type pngPool struct{ b *png.EncoderBuffer }

func (p *pngPool) Get() *png.EncoderBuffer  { return p.b }
func (p *pngPool) Put(b *png.EncoderBuffer) { p.b = b }

func newImageEncoder(format, content string) (*imageEncoder, error) {
	if format != "jpeg" && format != "png" {
		return nil, fmt.Errorf("image format must be jpeg or png, got %q", format)
	}
	if content != "random" && content != "blank" {
		return nil, fmt.Errorf("image content must be random or blank, got %q", content)
	}
	e := &imageEncoder{format: format, blank: content == "blank", blanks: map[[2]int]string{}}
	// Random pixels do not compress, so deflate would only cost time (and
	// NoCompression skips PNG's per-row filter search too). A blank image
	// is encoded once per size, so it is compressed as well as it can be.
	level := png.NoCompression
	if e.blank {
		level = png.BestCompression
	}
	e.png = png.Encoder{CompressionLevel: level, BufferPool: &pngPool{}}
	return e, nil
}

// dataURI returns an h×w image as data:image/<format>;base64,...
func (e *imageEncoder) dataURI(h, w int, r *rand.Rand) (string, error) {
	if e.blank {
		if s, ok := e.blanks[[2]int{h, w}]; ok {
			return s, nil
		}
	}
	if e.format == "jpeg" && !e.blank {
		if e.noise == nil {
			// The pool has its own fixed seed, so that building it on
			// first use does not shift the draws of a seeded dataset.
			var err error
			if e.noise, err = newNoiseJPEG(rand.New(rand.NewPCG(0x6e6f697365, 0x6a706567))); err != nil {
				return "", err
			}
		}
		e.frame = e.noise.appendFrame(e.frame[:0], h, w, r)
		return dataURI("image/jpeg", e.frame), nil
	}
	n := h * w * 4
	if cap(e.img.Pix) < n {
		e.img.Pix = make([]byte, n)
	}
	e.img.Pix, e.img.Stride, e.img.Rect = e.img.Pix[:n], w*4, image.Rect(0, 0, w, h)
	pix := e.img.Pix
	if e.blank {
		for i := range pix {
			pix[i] = 0xff
		}
	} else {
		i := 0
		for ; i+8 <= n; i += 8 {
			binary.LittleEndian.PutUint64(pix[i:], r.Uint64())
		}
		for v := r.Uint64(); i < n; i, v = i+1, v>>8 {
			pix[i] = byte(v)
		}
		for i := 3; i < n; i += 4 {
			pix[i] = 0xff // opaque, so PNG writes RGB as PIL does
		}
	}
	e.out.Reset()
	var err error
	if e.format == "png" {
		err = e.png.Encode(&e.out, &e.img)
	} else {
		err = jpeg.Encode(&e.out, &e.img, &jpeg.Options{Quality: 85})
	}
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", e.format, err)
	}
	s := dataURI("image/"+e.format, e.out.Bytes())
	if e.blank {
		e.blanks[[2]int{h, w}] = s
	}
	return s, nil
}

func dataURI(mime string, b []byte) string {
	prefix := "data:" + mime + ";base64,"
	buf := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(b)))
	copy(buf, prefix)
	base64.StdEncoding.Encode(buf[len(prefix):], b)
	return string(buf)
}

// imageDataset is bench_serving's "image".
type imageDataset struct {
	opts   Options
	tok    Tokenizer
	res    resolution
	vision visionCounter
	corpus *textCorpus

	mu  sync.Mutex // guards enc
	enc *imageEncoder
}

func newImage(opts Options, tok Tokenizer) (Dataset, error) {
	var errs []error
	res, err := parseResolution(opts.ImageResolution)
	errs = append(errs, err)
	enc, err := newImageEncoder(opts.ImageFormat, opts.ImageContent)
	errs = append(errs, err)
	if opts.ImageCount < 1 {
		errs = append(errs, fmt.Errorf("image count must be at least 1, got %d", opts.ImageCount))
	}
	errs = append(errs, checkRatio("random range ratio", opts.RandomRangeRatio))
	if opts.TokenizePrompt {
		errs = append(errs, errors.New("image does not support tokenize prompt"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d := &imageDataset{opts: opts, tok: tok, res: res, vision: newVisionCounter(tok), enc: enc}
	if !opts.Compat {
		if d.corpus, err = embeddedCorpus(tok); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Generate draws text lengths, output lengths, then per prompt its text,
// its image count and its images.
func (d *imageDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	inLens := randomLens(d.opts.RandomInputLen, d.opts.RandomRangeRatio, n, r)
	outLens := randomLens(d.opts.RandomOutputLen, d.opts.RandomRangeRatio, n, r)
	out := make([]Prompt, n)
	for i := range out {
		text, err := d.text(inLens[i], r)
		if err != nil {
			return nil, fmt.Errorf("image prompt %d: %w", i, err)
		}
		count := d.opts.ImageCount
		if d.opts.RandomImageCount {
			count = 1 + r.IntN(count)
		}
		p := Prompt{Text: text, OutputLen: outLens[i], Images: make([]string, count)}
		for k := range count {
			h, w := d.res.draw(r)
			if p.Images[k], err = d.enc.dataURI(h, w, r); err != nil {
				return nil, fmt.Errorf("image prompt %d: %w", i, err)
			}
			p.VisionPromptLen += d.vision.tokens(h, w)
		}
		if p.TextPromptLen, err = countPrompt(d.opts, d.tok, text); err != nil {
			return nil, fmt.Errorf("image prompt %d: %w", i, err)
		}
		p.PromptLen = p.TextPromptLen + p.VisionPromptLen
		out[i] = p
	}
	return out, nil
}

// text is exact corpus text in exact mode, else decoded random ids below
// VocabSize (which excludes added tokens, so no special or image-pad ids).
func (d *imageDataset) text(n int, r *rand.Rand) (string, error) {
	if !d.opts.Compat {
		return d.corpus.exactCorpusText(d.tok, n, r)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(d.tok.VocabSize())
	}
	return d.tok.Decode(ids, false)
}

// countPrompt counts a single-user-turn prompt's text tokens: through the
// chat template when one is given and asked for, else the raw text with
// special tokens.
func countPrompt(opts Options, tok Tokenizer, text string) (int, error) {
	s, err := transformPrompt(Options{ApplyChatTemplate: opts.ApplyChatTemplate, ChatTemplate: opts.ChatTemplate, BOSToken: opts.BOSToken}, text)
	if err != nil {
		return 0, err
	}
	ids, err := tok.Encode(s, true)
	if err != nil {
		return 0, fmt.Errorf("encode: %w", err)
	}
	return len(ids), nil
}
