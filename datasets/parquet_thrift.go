package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A parquet file's footer and page headers are Thrift structs in Thrift's
// compact protocol (parquet-format's parquet.thrift). thriftReader decodes
// just that protocol over a byte slice: the fields the reader needs are read
// by id, every other field is skipped by its wire type, so a file written
// by a newer writer (with fields this reader does not know) still reads.

// Compact protocol wire types.
const (
	thriftStop   = 0
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI16    = 4
	thriftI32    = 5
	thriftI64    = 6
	thriftDouble = 7
	thriftBinary = 8
	thriftList   = 9
	thriftSet    = 10
	thriftMap    = 11
	thriftStruct = 12
)

// thriftMaxDepth bounds the nesting of structs and containers: a
// parquet footer nests a few levels deep (FileMetaData, RowGroup,
// ColumnChunk, ColumnMetaData, Statistics, LogicalType), and a crafted file
// must not recurse without end.
const thriftMaxDepth = 32

var errThriftShort = errors.New("thrift: unexpected end of data")

type thriftReader struct {
	b     []byte
	pos   int
	depth int
}

func (r *thriftReader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errThriftShort
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *thriftReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errThriftShort
		}
		return 0, errors.New("thrift: varint overflows 64 bits")
	}
	r.pos += n
	return v, nil
}

func (r *thriftReader) varint() (int64, error) {
	u, err := r.uvarint()
	return int64(u>>1) ^ -int64(u&1), err // zigzag
}

// i32 reads an i32 (an enum's wire form too).
func (r *thriftReader) i32() (int32, error) {
	v, err := r.varint()
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		err = fmt.Errorf("thrift: i32 value %d out of range", v)
	}
	return int32(v), err
}

func (r *thriftReader) i64() (int64, error) { return r.varint() }

// binary reads a length-prefixed byte string, as a sub-slice of the data.
func (r *thriftReader) binary() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.pos) {
		return nil, errThriftShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *thriftReader) string() (string, error) {
	b, err := r.binary()
	return string(b), err
}

// listHeader reads a list's (or set's) element type and size. The size is
// checked against the bytes left, as every element takes at least one
// byte (bool elements too), so that a crafted size cannot size an
// allocation.
func (r *thriftReader) listHeader() (elem byte, n int, err error) {
	h, err := r.byte()
	if err != nil {
		return 0, 0, err
	}
	size := uint64(h >> 4)
	if size == 15 {
		if size, err = r.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	if size > uint64(len(r.b)-r.pos) {
		return 0, 0, errThriftShort
	}
	return h & 0x0f, int(size), nil
}

// readStruct reads a struct's fields in order, calling field for each;
// field reads the value or calls skip. The field ids are deltas from the
// previous field's, or a full i16 after a zero delta.
func (r *thriftReader) readStruct(field func(id int16, typ byte) error) error {
	if r.depth++; r.depth > thriftMaxDepth {
		return errors.New("thrift: structs nested too deep")
	}
	defer func() { r.depth-- }()
	var last int16
	for {
		h, err := r.byte()
		if err != nil {
			return err
		}
		typ := h & 0x0f
		if typ == thriftStop {
			return nil
		}
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := r.varint()
			if err != nil {
				return err
			}
			id = int16(v)
		}
		last = id
		if err := field(id, typ); err != nil {
			return err
		}
	}
}

// skip consumes one value of wire type typ. A bool field's value is in its
// type, so it has nothing to consume.
func (r *thriftReader) skip(typ byte) error {
	switch typ {
	case thriftTrue, thriftFalse:
		return nil
	case thriftByte:
		_, err := r.byte()
		return err
	case thriftI16, thriftI32, thriftI64:
		_, err := r.uvarint()
		return err
	case thriftDouble:
		if len(r.b)-r.pos < 8 {
			return errThriftShort
		}
		r.pos += 8
		return nil
	case thriftBinary:
		_, err := r.binary()
		return err
	case thriftList, thriftSet:
		elem, n, err := r.listHeader()
		if err != nil {
			return err
		}
		return r.skipN(elem, n)
	case thriftMap:
		n, err := r.uvarint()
		if err != nil || n == 0 {
			return err
		}
		if n > uint64(len(r.b)-r.pos) {
			return errThriftShort
		}
		kv, err := r.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skipN(kv>>4, 1); err != nil {
				return err
			}
			if err := r.skipN(kv&0x0f, 1); err != nil {
				return err
			}
		}
		return nil
	case thriftStruct:
		return r.readStruct(func(_ int16, typ byte) error { return r.skip(typ) })
	}
	return fmt.Errorf("thrift: unknown wire type %d", typ)
}

// skipN skips n container elements of type elem. Inside a container a
// bool takes a byte of its own.
func (r *thriftReader) skipN(elem byte, n int) error {
	if r.depth++; r.depth > thriftMaxDepth {
		return errors.New("thrift: containers nested too deep")
	}
	defer func() { r.depth-- }()
	for range n {
		var err error
		if elem == thriftTrue || elem == thriftFalse {
			_, err = r.byte()
		} else {
			err = r.skip(elem)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// thriftWant checks a field's wire type before its value is read as that
// type.
func thriftWant(id int16, typ, want byte) error {
	if typ != want {
		return fmt.Errorf("thrift: field %d has wire type %d, want %d", id, typ, want)
	}
	return nil
}
