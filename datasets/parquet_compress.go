package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// snappyDecode decodes a Snappy block (the block format, which parquet's
// SNAPPY pages hold, not the framed stream format) of size bytes: a varint
// length, then elements, each a literal or a copy from earlier output.
// Snappy expands at most 64 bytes from a 3-byte copy, so a length beyond
// that ratio is refused before it sizes the output.
func snappyDecode(src []byte, size int) ([]byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return nil, errors.New("snappy: bad length")
	}
	if n != uint64(size) || n > 22*uint64(len(src)) {
		return nil, fmt.Errorf("snappy: length %d, want %d from %d bytes", n, size, len(src))
	}
	dst := make([]byte, n)
	s, d := k, 0
	for s < len(src) {
		tag := src[s]
		var length, offset int
		switch tag & 3 {
		case 0: // literal
			x := int(tag >> 2)
			s++
			if x >= 60 {
				nb := x - 59
				if len(src)-s < nb {
					return nil, errors.New("snappy: literal length cut short")
				}
				x = 0
				for i := range nb {
					x |= int(src[s+i]) << (8 * i)
				}
				s += nb
			}
			length = x + 1
			if length > len(src)-s || length > len(dst)-d {
				return nil, errors.New("snappy: literal runs past the data")
			}
			d += copy(dst[d:], src[s:s+length])
			s += length
			continue
		case 1:
			if len(src)-s < 2 {
				return nil, errors.New("snappy: copy cut short")
			}
			length = 4 + int(tag>>2)&7
			offset = int(tag&0xe0)<<3 | int(src[s+1])
			s += 2
		case 2:
			if len(src)-s < 3 {
				return nil, errors.New("snappy: copy cut short")
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint16(src[s+1:]))
			s += 3
		case 3:
			if len(src)-s < 5 {
				return nil, errors.New("snappy: copy cut short")
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint32(src[s+1:]))
			s += 5
		}
		if offset <= 0 || offset > d || length > len(dst)-d {
			return nil, fmt.Errorf("snappy: copy of %d bytes from %d back at %d", length, offset, d)
		}
		for i := range length { // byte by byte: a copy may overlap its own output
			dst[d+i] = dst[d-offset+i]
		}
		d += length
	}
	if d != len(dst) {
		return nil, fmt.Errorf("snappy: %d bytes, the length says %d", d, len(dst))
	}
	return dst, nil
}

// lz4Decode decodes an LZ4 block (parquet's LZ4_RAW) of size bytes:
// sequences of a token (literal and match length nibbles, 15 meaning that
// more length bytes follow), the literals, a 2-byte offset and the match;
// the last sequence has literals only. A block expands at most 255 times
// (a length byte of 255), which bounds the size before it is allocated.
func lz4Decode(src []byte, size int) ([]byte, error) {
	if size > 255*len(src)+16 {
		return nil, fmt.Errorf("lz4: %d bytes from %d", size, len(src))
	}
	dst := make([]byte, size)
	s, d := 0, 0
	length := func(n int) (int, error) {
		if n != 15 {
			return n, nil
		}
		for {
			if s >= len(src) {
				return 0, errors.New("lz4: length cut short")
			}
			b := src[s]
			s++
			n += int(b)
			if n > len(dst) {
				return 0, errors.New("lz4: length runs past the data")
			}
			if b != 255 {
				return n, nil
			}
		}
	}
	for s < len(src) {
		token := src[s]
		s++
		lit, err := length(int(token >> 4))
		if err != nil {
			return nil, err
		}
		if lit > len(src)-s || lit > len(dst)-d {
			return nil, errors.New("lz4: literals run past the data")
		}
		d += copy(dst[d:], src[s:s+lit])
		s += lit
		if s == len(src) {
			break
		}
		if len(src)-s < 2 {
			return nil, errors.New("lz4: offset cut short")
		}
		offset := int(binary.LittleEndian.Uint16(src[s:]))
		s += 2
		match, err := length(int(token & 15))
		if err != nil {
			return nil, err
		}
		match += 4
		if offset == 0 || offset > d || match > len(dst)-d {
			return nil, fmt.Errorf("lz4: match of %d bytes from %d back at %d", match, offset, d)
		}
		for i := range match { // byte by byte: a match may overlap its own output
			dst[d+i] = dst[d-offset+i]
		}
		d += match
	}
	if d != len(dst) {
		return nil, fmt.Errorf("lz4: %d bytes, the header says %d", d, len(dst))
	}
	return dst, nil
}
