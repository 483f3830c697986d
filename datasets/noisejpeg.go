package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
)

// A random-content JPEG is noise, and encoding noise is slow: image/jpeg
// takes about 0.1 s for a 1080p frame here, most of it in the forward DCT
// and the entropy coding of large coefficients, so 1,000 prompts of 3
// images waited minutes. Servers must still receive what bench_serving
// sends (a noise JPEG of the requested size, as large and as costly to
// decode), and every image must differ, or a server's image cache would
// answer.
//
// noiseJPEG gets that at the cost of copying bytes. It encodes a pool of
// single-MCU (16×16) noise images once with image/jpeg, keeps each one's
// entropy-coded bytes, and builds a frame of any size from MCUs drawn at
// random from the pool, with a restart marker after every MCU. A restart
// resets the DC predictors and realigns to a byte (JPEG's own mechanism
// for independent segments, which every decoder supports), so each pooled
// MCU is valid wherever it lands. The header (quantization and Huffman
// tables) is image/jpeg's, with the frame size patched and a DRI segment
// added. Frames differ with overwhelming probability: a 1080p frame is
// 8,160 draws from the pool.

// noisePoolSize is how many distinct MCUs are pooled.
const noisePoolSize = 512

// noiseQuality is bench_serving's PIL default quality for its JPEGs, 85.
const noiseQuality = 85

// JPEG markers.
const (
	markerSOF0 = 0xc0
	markerSOS  = 0xda
	markerEOI  = 0xd9
	markerRST0 = 0xd0
	markerDRI  = 0xdd
)

type noiseJPEG struct {
	header []byte   // SOI up to SOS, with the SOF0 size at sofAt
	sofAt  int      // offset of SOF0's height field in header
	sos    []byte   // the SOS segment
	mcus   [][]byte // entropy-coded bytes of one 16×16 MCU each
}

// newNoiseJPEG builds the pool from r.
func newNoiseJPEG(r *rand.Rand) (*noiseJPEG, error) {
	n := &noiseJPEG{mcus: make([][]byte, 0, noisePoolSize)}
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	var buf bytes.Buffer
	for range noisePoolSize {
		for i := 0; i < len(img.Pix); i += 8 {
			binary.LittleEndian.PutUint64(img.Pix[i:], r.Uint64())
		}
		for i := 3; i < len(img.Pix); i += 4 {
			img.Pix[i] = 0xff
		}
		buf.Reset()
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: noiseQuality}); err != nil {
			return nil, err
		}
		header, sos, data, err := splitJPEG(buf.Bytes())
		if err != nil {
			return nil, err
		}
		// The buffer is reused for the next MCU: keep copies.
		if n.header == nil {
			n.header, n.sos = bytes.Clone(header), bytes.Clone(sos)
			if n.sofAt = sofSizeOffset(header); n.sofAt < 0 {
				return nil, errors.New("noise jpeg: no SOF0 in image/jpeg's output")
			}
		}
		n.mcus = append(n.mcus, bytes.Clone(data))
	}
	return n, nil
}

// splitJPEG cuts a baseline JPEG into the segments before SOS, the SOS
// segment, and the entropy-coded data (without EOI).
func splitJPEG(b []byte) (header, sos, data []byte, err error) {
	i := 2 // after SOI
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return nil, nil, nil, fmt.Errorf("noise jpeg: no marker at %d", i)
		}
		length := int(binary.BigEndian.Uint16(b[i+2:]))
		end := i + 2 + length
		if end > len(b) {
			break
		}
		if b[i+1] == markerSOS {
			if len(b) < end+2 || b[len(b)-2] != 0xff || b[len(b)-1] != markerEOI {
				return nil, nil, nil, errors.New("noise jpeg: no EOI")
			}
			return b[:i:i], b[i:end:end], b[end : len(b)-2 : len(b)-2], nil
		}
		i = end
	}
	return nil, nil, nil, errors.New("noise jpeg: no SOS")
}

// sofSizeOffset finds SOF0's height field (width follows) in header.
func sofSizeOffset(header []byte) int {
	for i := 2; i+4 <= len(header); {
		length := int(binary.BigEndian.Uint16(header[i+2:]))
		if header[i+1] == markerSOF0 {
			return i + 5 // marker(2) length(2) precision(1)
		}
		i += 2 + length
	}
	return -1
}

// appendFrame appends an h×w noise JPEG to dst.
func (n *noiseJPEG) appendFrame(dst []byte, h, w int, r *rand.Rand) []byte {
	start := len(dst)
	dst = append(dst, n.header...)
	binary.BigEndian.PutUint16(dst[start+n.sofAt:], uint16(h))
	binary.BigEndian.PutUint16(dst[start+n.sofAt+2:], uint16(w))
	dst = append(dst, 0xff, markerDRI, 0, 4, 0, 1) // a restart after every MCU
	dst = append(dst, n.sos...)
	count := ((h + 15) / 16) * ((w + 15) / 16)
	for i := range count {
		if i > 0 {
			dst = append(dst, 0xff, markerRST0+byte((i-1)%8))
		}
		dst = append(dst, n.mcus[r.IntN(len(n.mcus))]...)
	}
	return append(dst, 0xff, markerEOI)
}
