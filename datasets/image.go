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
	"slices"
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

// imageDataset is bench_serving's "image". Its prompts carry their images
// lazily (LazyImages): the sizes and a seed are drawn with the prompt, and
// the pixels are made and encoded when the request is built, so that a
// run holds the images of its requests in flight rather than of every
// prompt.
type imageDataset struct {
	opts   Options
	tok    Tokenizer
	res    resolution
	vision visionCounter
	corpus *textCorpus
	gen    *imageGen
}

// imageGen encodes the images of lazy prompts. Encoders reuse their
// buffers and are not safe for concurrent use, so requests built at once
// take one each from the pool rather than wait on one.
type imageGen struct {
	format, content string
	pool            sync.Pool // *imageEncoder
}

func (g *imageGen) encoder() (*imageEncoder, error) {
	if e, ok := g.pool.Get().(*imageEncoder); ok {
		return e, nil
	}
	return newImageEncoder(g.format, g.content)
}

// LazyImages are a prompt's images before they are made: each one's size
// and the seed of the generator that draws their pixels, so that the same
// prompt always makes the same images.
type LazyImages struct {
	Sizes [][2]int  // height, width of each image
	Seed  [2]uint64 // the PCG seed of their pixels
	gen   *imageGen
}

// Equal is whether l and o make the same images: the same sizes, seed,
// format and content. (It lets go-cmp compare prompts, too.)
func (l *LazyImages) Equal(o *LazyImages) bool {
	if l == nil || o == nil {
		return l == o
	}
	return slices.Equal(l.Sizes, o.Sizes) && l.Seed == o.Seed &&
		l.gen.format == o.gen.format && l.gen.content == o.gen.content
}

// Bytes is an upper bound of the images' size as data URIs.
func (l *LazyImages) Bytes() uint64 {
	var n uint64
	for _, hw := range l.Sizes {
		n += imageURIBytes(hw[0], hw[1], l.gen.format, l.gen.content)
	}
	return n
}

// make encodes the images.
func (l *LazyImages) make() ([]string, error) {
	e, err := l.gen.encoder()
	if err != nil {
		return nil, err
	}
	defer l.gen.pool.Put(e)
	r := rand.New(rand.NewPCG(l.Seed[0], l.Seed[1]))
	out := make([]string, len(l.Sizes))
	for k, hw := range l.Sizes {
		if out[k], err = e.dataURI(hw[0], hw[1], r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WithImages returns p with its lazy images and audio clips made: the
// prompt as its request sends it. A prompt without lazy media is returned
// as it is. The media are not kept in the prompt set, only in the copy
// returned, which the request holds while it is built and sent.
func (p Prompt) WithImages() (Prompt, error) {
	if p.LazyAudio != nil && p.Audio == nil {
		p.Audio = p.LazyAudio.make()
	}
	if p.LazyImages == nil || p.Images != nil {
		return p, nil
	}
	imgs, err := p.LazyImages.make()
	if err != nil {
		return p, fmt.Errorf("images: %w", err)
	}
	p.Images = imgs
	return p, nil
}

// imageURIBytes bounds the size of one h×w image as a data URI: the
// encoded image (bytesPerPixel) in base64, plus the header. A blank image
// compresses to almost nothing and is cached per size, but it is bounded
// as if it did not, which errs high.
func imageURIBytes(h, w int, format, content string) uint64 {
	// PNG without compression: RGB, a filter byte a row, and deflate's
	// stored blocks and PNG's chunks, each a few bytes in a few thousand.
	bpp := 3.05
	if format == "jpeg" {
		bpp = jpegNoiseBytesPerPixel
	}
	raw := uint64(float64(h)*float64(w)*bpp) + uint64(h) + 4096
	return raw/3*4 + 64
}

// jpegNoiseBytesPerPixel bounds the size of a noise JPEG at quality 85
// per pixel; TestImageURIBytes holds it above what noiseJPEG makes.
const jpegNoiseBytesPerPixel = 1.5

// ImageBytes bounds what one prompt of the image dataset with o holds in
// images while its request is built and sent: the largest image count at
// the largest resolution, as data URIs, twice (the URIs and the request
// body that quotes them), plus an encoder's pixel buffer. For the audio
// dataset, its clips likewise (audioFlightBytes). 0 for any other dataset,
// whose prompts carry no generated media.
func ImageBytes(dataset string, o Options) uint64 {
	if dataset == "audio" {
		return audioFlightBytes(o)
	}
	if dataset != "image" {
		return 0
	}
	res, err := parseResolution(o.ImageResolution)
	if err != nil {
		return 0 // refused by New anyway
	}
	one := imageURIBytes(res.maxH, res.maxW, o.ImageFormat, o.ImageContent)
	return uint64(max(o.ImageCount, 1))*one*2 + uint64(res.maxH)*uint64(res.maxW)*4
}

func newImage(opts Options, tok Tokenizer) (Dataset, error) {
	var errs []error
	res, err := parseResolution(opts.ImageResolution)
	errs = append(errs, err)
	_, err = newImageEncoder(opts.ImageFormat, opts.ImageContent)
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
	d := &imageDataset{opts: opts, tok: tok, res: res, vision: newVisionCounter(tok), gen: &imageGen{format: opts.ImageFormat, content: opts.ImageContent}}
	if !opts.Compat {
		if d.corpus, err = embeddedCorpus(tok); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Generate draws text lengths, output lengths, then per prompt its text,
// its image count, its images' sizes and the seed of their pixels; the
// images are made when each request is built (Prompt.WithImages).
func (d *imageDataset) Generate(n int, r *rand.Rand) ([]Prompt, error) {
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
		lazy := &LazyImages{Sizes: make([][2]int, count), gen: d.gen}
		p := Prompt{Text: text, OutputLen: outLens[i], LazyImages: lazy}
		for k := range count {
			h, w := d.res.draw(r)
			lazy.Sizes[k] = [2]int{h, w}
			p.VisionPromptLen += d.vision.tokens(h, w)
		}
		lazy.Seed = [2]uint64{r.Uint64(), r.Uint64()}
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
