package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// This file reads top-level string columns of a parquet file: what the
// LongBench-v2 reader needs of the hub's parquet export, and no more. It
// replaces a general parquet library that was the largest single cost of
// a cold build of the binary, for one dataset's optional file format: its
// own 28 packages, three compression libraries and a geometry library.
// Without it `go list -deps ./cmd/servingprobe` lists 386 packages, not
// 440, from 43 modules, not 49.
//
// What it reads, from parquet-format's specification:
//   - the footer (FileMetaData) and page headers in Thrift's compact
//     protocol (parquet_thrift.go);
//   - BYTE_ARRAY leaf columns directly under the root, required or
//     optional; a null is reported with its row;
//   - data pages of version 1 and 2, and dictionary pages;
//   - values encoded PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY,
//     DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY: every encoding the
//     specification allows for a BYTE_ARRAY column;
//   - pages UNCOMPRESSED or compressed SNAPPY (pyarrow's and pandas'
//     default), GZIP, ZSTD (polars' default) or LZ4_RAW. BROTLI, LZO and
//     the deprecated Hadoop-framed LZ4 are refused with the codec's name.
//
// Every size and count in a file is checked against the bytes that are
// really there before it sizes an allocation, so a damaged or crafted
// file is an error, never a crash or an outsized allocation
// (FuzzLongBenchV2File).

// Physical types, repetitions, codecs, page types and encodings, numbered
// as in parquet.thrift.
const (
	pqByteArray = 6

	pqRequired = 0
	pqRepeated = 2

	pqPageData       = 0
	pqPageDictionary = 2
	pqPageDataV2     = 3

	pqPlain              = 0
	pqPlainDictionary    = 2
	pqRLE                = 3
	pqDeltaLengthByteArr = 6
	pqDeltaByteArray     = 7
	pqRLEDictionary      = 8
)

var pqTypeNames = [...]string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}

var pqCodecNames = [...]string{"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"}

var pqEncodingNames = [...]string{"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
	"DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"}

func pqName(names []string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("unknown (%d)", v)
}

// pqMaxRows bounds the rows a footer may claim. A row count sizes the
// level and value slices of a page (a run-length encoded page states a
// million nulls in a few bytes), so it must be bounded by something other
// than the file; LongBench-v2 has 503 rows, and a file of 4Mi rows of
// multiple-choice questions over long contexts would be terabytes.
const pqMaxRows = 1 << 22

// pqMaxPage bounds a page's uncompressed size, and so what a crafted
// page header or zstd frame can make the reader allocate: a LongBench-v2
// context is a few megabytes, and a writer closes a page at about one
// megabyte of values (pyarrow) or after one larger value.
const pqMaxPage = 256 << 20

// parquetSchemaError is a file whose columns are not the ones asked for:
// a readable file, but not of the expected shape.
type parquetSchemaError struct{ msg string }

func (e *parquetSchemaError) Error() string { return e.msg }

// parquetNullError is a null value in a column that must hold strings;
// Row counts from 0 over the whole file, as pandas' index does.
type parquetNullError struct {
	Row    int64
	Column string
}

func (e *parquetNullError) Error() string {
	return fmt.Sprintf("row %d: column %q is null, want a string", e.Row, e.Column)
}

type pqSchemaElement struct {
	typ         int32
	hasType     bool
	repetition  int32
	name        string
	numChildren int32
}

type pqColumnChunk struct {
	external       bool // file_path is set: the chunk is in another file
	hasMeta        bool
	typ            int32
	path           []string
	codec          int32
	numValues      int64
	compressedSize int64
	dataOffset     int64
	dictOffset     int64
}

type pqRowGroup struct {
	numRows int64
	columns []pqColumnChunk
}

type pqFile struct {
	schema    []pqSchemaElement
	numRows   int64
	rowGroups []pqRowGroup
}

// pqLeaf is a top-level column the caller asked for: its index among the
// file's leaf columns (the order of a row group's column chunks) and its
// maximum definition level (1 when optional).
type pqLeaf struct {
	name   string
	index  int
	maxDef int
}

// readParquetStrings reads the named top-level string columns of the
// parquet file r (of size bytes) and calls row with each row's values in
// the order of names, in file order. The slice passed to row is reused.
// A column that is missing, a group, repeated or not BYTE_ARRAY is a
// *parquetSchemaError, a null value a *parquetNullError; any other error
// is a file this reader cannot decode.
func readParquetStrings(r io.ReaderAt, size int64, names []string, row func([]string)) error {
	pf, err := readParquetFooter(r, size)
	if err != nil {
		return err
	}
	leaves, err := pf.leaves(names)
	if err != nil {
		return err
	}
	d := &pqDecoder{r: r, size: size}
	defer d.close()
	var base int64
	vals := make([]string, len(names))
	for g := range pf.rowGroups {
		rg := &pf.rowGroups[g]
		cols := make([][]string, len(leaves))
		var null *parquetNullError
		for i, leaf := range leaves {
			v, nullAt, err := d.readColumn(rg, leaf)
			if err != nil {
				return fmt.Errorf("row group %d: column %q: %w", g, leaf.name, err)
			}
			if nullAt >= 0 && (null == nil || base+nullAt < null.Row) {
				null = &parquetNullError{Row: base + nullAt, Column: leaf.name}
			}
			cols[i] = v
		}
		if null != nil {
			return null
		}
		for j := range rg.numRows {
			for i := range cols {
				vals[i] = cols[i][j]
			}
			row(vals)
		}
		base += rg.numRows
	}
	return nil
}

// readParquetFooter reads the file's metadata: the Thrift FileMetaData
// before the closing length and "PAR1".
func readParquetFooter(r io.ReaderAt, size int64) (*pqFile, error) {
	if size < 12 {
		return nil, errors.New("too short for a parquet file")
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" {
		return nil, errors.New("no PAR1 at the end of the file")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, fmt.Errorf("footer length %d exceeds the file", n)
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-8-n); err != nil {
		return nil, err
	}
	pf, err := parseFileMetaData(buf)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	if pf.numRows < 0 || pf.numRows > pqMaxRows {
		return nil, fmt.Errorf("footer claims %d rows, want 0 to %d", pf.numRows, pqMaxRows)
	}
	var sum int64
	for i, rg := range pf.rowGroups {
		if rg.numRows < 0 || rg.numRows > pf.numRows-sum {
			return nil, fmt.Errorf("row group %d claims %d rows, beyond the file's %d", i, rg.numRows, pf.numRows)
		}
		sum += rg.numRows
	}
	if sum != pf.numRows {
		return nil, fmt.Errorf("row groups hold %d rows, the footer claims %d", sum, pf.numRows)
	}
	return pf, nil
}

func parseFileMetaData(b []byte) (*pqFile, error) {
	t := &thriftReader{b: b}
	pf := &pqFile{}
	err := t.readStruct(func(id int16, typ byte) error {
		switch id {
		case 2: // schema
			return readList(t, id, typ, func() error {
				var e pqSchemaElement
				err := t.readStruct(func(id int16, typ byte) (err error) {
					switch id {
					case 1:
						e.hasType = true
						e.typ, err = readI32(t, id, typ)
					case 3:
						e.repetition, err = readI32(t, id, typ)
					case 4:
						if err = thriftWant(id, typ, thriftBinary); err == nil {
							e.name, err = t.string()
						}
					case 5:
						e.numChildren, err = readI32(t, id, typ)
					default:
						err = t.skip(typ)
					}
					return err
				})
				pf.schema = append(pf.schema, e)
				return err
			})
		case 3: // num_rows
			return readI64(t, id, typ, &pf.numRows)
		case 4: // row_groups
			return readList(t, id, typ, func() error {
				var rg pqRowGroup
				err := t.readStruct(func(id int16, typ byte) error {
					switch id {
					case 1:
						return readList(t, id, typ, func() error {
							c, err := parseColumnChunk(t)
							rg.columns = append(rg.columns, c)
							return err
						})
					case 3:
						return readI64(t, id, typ, &rg.numRows)
					}
					return t.skip(typ)
				})
				pf.rowGroups = append(pf.rowGroups, rg)
				return err
			})
		}
		return t.skip(typ)
	})
	return pf, err
}

func parseColumnChunk(t *thriftReader) (pqColumnChunk, error) {
	var c pqColumnChunk
	err := t.readStruct(func(id int16, typ byte) error {
		switch id {
		case 1: // file_path
			c.external = true
			return t.skip(typ)
		case 3: // meta_data
			if err := thriftWant(id, typ, thriftStruct); err != nil {
				return err
			}
			c.hasMeta = true
			return t.readStruct(func(id int16, typ byte) (err error) {
				switch id {
				case 1:
					c.typ, err = readI32(t, id, typ)
				case 3:
					err = readList(t, id, typ, func() error {
						s, err := t.string()
						c.path = append(c.path, s)
						return err
					})
				case 4:
					c.codec, err = readI32(t, id, typ)
				case 5:
					err = readI64(t, id, typ, &c.numValues)
				case 7:
					err = readI64(t, id, typ, &c.compressedSize)
				case 9:
					err = readI64(t, id, typ, &c.dataOffset)
				case 11:
					err = readI64(t, id, typ, &c.dictOffset)
				default:
					err = t.skip(typ)
				}
				return err
			})
		}
		return t.skip(typ)
	})
	return c, err
}

func readI32(t *thriftReader, id int16, typ byte) (int32, error) {
	if err := thriftWant(id, typ, thriftI32); err != nil {
		return 0, err
	}
	return t.i32()
}

func readI64(t *thriftReader, id int16, typ byte, v *int64) (err error) {
	if err := thriftWant(id, typ, thriftI64); err != nil {
		return err
	}
	*v, err = t.i64()
	return err
}

func readList(t *thriftReader, id int16, typ byte, elem func() error) error {
	if err := thriftWant(id, typ, thriftList); err != nil {
		return err
	}
	_, n, err := t.listHeader()
	if err != nil {
		return err
	}
	for range n {
		if err := elem(); err != nil {
			return err
		}
	}
	return nil
}

// leaves finds each named column among the root's children and checks
// that it is a string column the reader can take row by row: a leaf, not
// repeated, of physical type BYTE_ARRAY. A column's index is its place
// among all leaves in schema order, which is the order of a row group's
// column chunks.
func (pf *pqFile) leaves(names []string) ([]pqLeaf, error) {
	if len(pf.schema) == 0 {
		return nil, errors.New("footer has no schema")
	}
	type top struct {
		el    pqSchemaElement
		index int // leaf index; -1 for a group
	}
	var tops []top
	leaf := 0
	// walk consumes the element at i and its subtree, returning the next
	// element's index; the footer's own counts drive it, so it checks
	// them against the elements there are.
	var walk func(i, depth int) (int, error)
	walk = func(i, depth int) (int, error) {
		if i >= len(pf.schema) {
			return 0, errors.New("schema: a group has more children than there are elements")
		}
		if depth > thriftMaxDepth {
			return 0, errors.New("schema nested too deep")
		}
		e := pf.schema[i]
		if depth == 1 {
			index := -1
			if e.numChildren == 0 && e.hasType {
				index = leaf
			}
			tops = append(tops, top{e, index})
		}
		if e.numChildren == 0 && e.hasType {
			leaf++
			return i + 1, nil
		}
		if e.numChildren < 0 {
			return 0, fmt.Errorf("schema: %q has %d children", e.name, e.numChildren)
		}
		i++
		for range e.numChildren {
			var err error
			if i, err = walk(i, depth+1); err != nil {
				return 0, err
			}
		}
		return i, nil
	}
	if end, err := walk(0, 0); err != nil {
		return nil, err
	} else if end != len(pf.schema) {
		return nil, fmt.Errorf("schema: %d elements outside the root", len(pf.schema)-end)
	}
	for g, rg := range pf.rowGroups {
		if len(rg.columns) != leaf {
			return nil, fmt.Errorf("row group %d has %d column chunks, the schema %d columns", g, len(rg.columns), leaf)
		}
	}
	var have []string
	for _, t := range tops {
		have = append(have, t.el.name)
	}
	out := make([]pqLeaf, len(names))
	for k, name := range names {
		i := -1
		for j, t := range tops {
			if t.el.name == name {
				i = j
				break
			}
		}
		switch {
		case i < 0:
			return nil, &parquetSchemaError{fmt.Sprintf("no column %q (columns: %s)", name, strings.Join(have, ", "))}
		case tops[i].index < 0:
			return nil, &parquetSchemaError{fmt.Sprintf("column %q is a group, want a string (BYTE_ARRAY) column", name)}
		}
		e := tops[i].el
		if e.typ != pqByteArray || e.repetition == pqRepeated {
			what := pqName(pqTypeNames[:], e.typ)
			if e.repetition == pqRepeated {
				what = "a repeated " + what
			}
			return nil, &parquetSchemaError{fmt.Sprintf("column %q is %s, want a string (BYTE_ARRAY) column", name, what)}
		}
		out[k] = pqLeaf{name: name, index: tops[i].index}
		if e.repetition != pqRequired {
			out[k].maxDef = 1
		}
	}
	return out, nil
}

// pqDecoder reads column chunks of one file; it holds the zstd decoder,
// made on the first zstd page.
type pqDecoder struct {
	r    io.ReaderAt
	size int64
	zstd *zstd.Decoder
}

func (d *pqDecoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
	}
}

// readColumn reads one column chunk: rg.numRows values, in row order.
// The first null stops it: nullAt is that row's index in the row group,
// else -1.
func (d *pqDecoder) readColumn(rg *pqRowGroup, leaf pqLeaf) (vals []string, nullAt int64, err error) {
	c := &rg.columns[leaf.index]
	switch {
	case c.external:
		return nil, -1, errors.New("the column chunk is in another file")
	case !c.hasMeta:
		return nil, -1, errors.New("the column chunk has no metadata")
	case c.typ != pqByteArray:
		return nil, -1, fmt.Errorf("the column chunk is %s, the schema says BYTE_ARRAY", pqName(pqTypeNames[:], c.typ))
	case len(c.path) != 1 || c.path[0] != leaf.name:
		return nil, -1, fmt.Errorf("the column chunk's path is %q, want [%q]", c.path, leaf.name)
	case c.numValues != rg.numRows:
		return nil, -1, fmt.Errorf("the column chunk holds %d values for %d rows", c.numValues, rg.numRows)
	}
	start := c.dataOffset
	if c.dictOffset > 0 && c.dictOffset < start {
		start = c.dictOffset
	}
	if start < 4 || c.compressedSize < 0 || c.compressedSize > d.size-start {
		return nil, -1, fmt.Errorf("the column chunk at %d (%d bytes) is outside the file", start, c.compressedSize)
	}
	chunk := make([]byte, c.compressedSize)
	if _, err := d.r.ReadAt(chunk, start); err != nil {
		return nil, -1, err
	}
	var dict []string
	vals = make([]string, 0, rg.numRows)
	for len(vals) < int(rg.numRows) {
		if len(chunk) == 0 {
			return nil, -1, fmt.Errorf("the column chunk ends after %d of %d values", len(vals), rg.numRows)
		}
		h, n, err := parsePageHeader(chunk)
		if err != nil {
			return nil, -1, fmt.Errorf("page header: %w", err)
		}
		chunk = chunk[n:]
		if h.compressedSize < 0 || int(h.compressedSize) > len(chunk) {
			return nil, -1, fmt.Errorf("a page of %d bytes runs past the column chunk", h.compressedSize)
		}
		if h.uncompressedSize < 0 || h.uncompressedSize > pqMaxPage {
			return nil, -1, fmt.Errorf("a page claims %d bytes uncompressed", h.uncompressedSize)
		}
		payload := chunk[:h.compressedSize]
		chunk = chunk[h.compressedSize:]
		switch h.typ {
		case pqPageDictionary:
			if dict != nil {
				return nil, -1, errors.New("a second dictionary page")
			}
			if h.dictEncoding != pqPlain && h.dictEncoding != pqPlainDictionary {
				return nil, -1, fmt.Errorf("a dictionary page encoded %s", pqName(pqEncodingNames[:], h.dictEncoding))
			}
			page, err := d.decompress(c.codec, payload, int(h.uncompressedSize))
			if err != nil {
				return nil, -1, err
			}
			if h.numValues < 0 || int(h.numValues) > len(page)/4 {
				return nil, -1, fmt.Errorf("a dictionary page of %d bytes claims %d values", len(page), h.numValues)
			}
			dict = make([]string, h.numValues)
			if _, err := decodePlainByteArrays(string(page), dict); err != nil {
				return nil, -1, fmt.Errorf("dictionary page: %w", err)
			}
		case pqPageData, pqPageDataV2:
			if h.numValues < 0 || int(h.numValues) > int(rg.numRows)-len(vals) {
				return nil, -1, fmt.Errorf("a data page claims %d values, %d rows remain", h.numValues, int(rg.numRows)-len(vals))
			}
			page, err := d.dataPage(c.codec, &h, payload, leaf.maxDef)
			if err != nil {
				return nil, -1, err
			}
			var nulls int
			if vals, nulls, err = page.decode(vals, int(h.numValues), dict); err != nil {
				return nil, -1, err
			}
			if nulls >= 0 {
				return nil, int64(nulls), nil
			}
		default: // an index page, or a type a later format may add: skipped, as the specification asks
		}
	}
	return vals, -1, nil
}

// pqPageHeader holds the fields of a PageHeader the reader uses; numValues
// and the encodings are from whichever of the data, dictionary or data v2
// headers the page has.
type pqPageHeader struct {
	typ              int32
	uncompressedSize int32
	compressedSize   int32
	numValues        int32
	encoding         int32 // of the values
	defEncoding      int32 // of a v1 page's definition levels
	dictEncoding     int32
	defLen, repLen   int32 // v2: level bytes before the values
	v2Uncompressed   bool  // v2: is_compressed false
}

func parsePageHeader(b []byte) (h pqPageHeader, n int, err error) {
	t := &thriftReader{b: b}
	err = t.readStruct(func(id int16, typ byte) (err error) {
		switch id {
		case 1:
			h.typ, err = readI32(t, id, typ)
		case 2:
			h.uncompressedSize, err = readI32(t, id, typ)
		case 3:
			h.compressedSize, err = readI32(t, id, typ)
		case 5, 7, 8: // data_page_header, dictionary_page_header, data_page_header_v2
			if err := thriftWant(id, typ, thriftStruct); err != nil {
				return err
			}
			return t.readStruct(func(fid int16, typ byte) (err error) {
				switch {
				case fid == 1:
					h.numValues, err = readI32(t, fid, typ)
				case id == 5 && fid == 2, id == 8 && fid == 4:
					h.encoding, err = readI32(t, fid, typ)
				case id == 5 && fid == 3:
					h.defEncoding, err = readI32(t, fid, typ)
				case id == 7 && fid == 2:
					h.dictEncoding, err = readI32(t, fid, typ)
				case id == 8 && fid == 5:
					h.defLen, err = readI32(t, fid, typ)
				case id == 8 && fid == 6:
					h.repLen, err = readI32(t, fid, typ)
				case id == 8 && fid == 7:
					h.v2Uncompressed = typ == thriftFalse
					err = t.skip(typ)
				default:
					err = t.skip(typ)
				}
				return err
			})
		default:
			err = t.skip(typ)
		}
		return err
	})
	return h, t.pos, err
}

// pqDataPage is a data page's definition levels and encoded values, both
// uncompressed.
type pqDataPage struct {
	maxDef   int
	defs     []byte // RLE/bit-packed hybrid, without a length prefix
	encoding int32
	values   string
}

// dataPage uncompresses a data page and splits it into its levels and
// values. A v1 page compresses levels and values together, the levels
// behind a 4-byte length; a v2 page keeps the levels uncompressed in
// front and compresses only the values.
func (d *pqDecoder) dataPage(codec int32, h *pqPageHeader, payload []byte, maxDef int) (*pqDataPage, error) {
	p := &pqDataPage{maxDef: maxDef, encoding: h.encoding}
	if h.typ == pqPageData {
		page, err := d.decompress(codec, payload, int(h.uncompressedSize))
		if err != nil {
			return nil, err
		}
		if maxDef > 0 {
			if h.defEncoding != pqRLE {
				return nil, fmt.Errorf("definition levels encoded %s, want RLE", pqName(pqEncodingNames[:], h.defEncoding))
			}
			if len(page) < 4 {
				return nil, errors.New("a data page too short for its definition levels")
			}
			n := binary.LittleEndian.Uint32(page)
			if uint64(n) > uint64(len(page)-4) {
				return nil, fmt.Errorf("definition levels of %d bytes in a page of %d", n, len(page))
			}
			p.defs, page = page[4:4+n], page[4+n:]
		}
		p.values = string(page)
		return p, nil
	}
	if h.repLen != 0 {
		return nil, errors.New("a data page with repetition levels in a column that is not repeated")
	}
	if h.defLen < 0 || int(h.defLen) > len(payload) || h.defLen > h.uncompressedSize {
		return nil, fmt.Errorf("definition levels of %d bytes in a page of %d", h.defLen, len(payload))
	}
	p.defs = payload[:h.defLen]
	values := payload[h.defLen:]
	if !h.v2Uncompressed {
		var err error
		if values, err = d.decompress(codec, values, int(h.uncompressedSize-h.defLen)); err != nil {
			return nil, err
		}
	} else if len(values) != int(h.uncompressedSize-h.defLen) {
		return nil, fmt.Errorf("an uncompressed page of %d bytes claims %d", len(payload), h.uncompressedSize)
	}
	p.values = string(values)
	return p, nil
}

// decode appends the page's n values to vals. At the first null it stops
// and returns that value's index in the column chunk; nulls is -1 when
// there is none.
func (p *pqDataPage) decode(vals []string, n int, dict []string) (_ []string, nulls int, err error) {
	present := n
	if p.maxDef > 0 {
		defs, err := decodeHybrid(p.defs, bits.Len(uint(p.maxDef)), n)
		if err != nil {
			return nil, 0, fmt.Errorf("definition levels: %w", err)
		}
		for i, v := range defs {
			if int(v) != p.maxDef {
				present = i
				break
			}
		}
	}
	vs := make([]string, present)
	switch p.encoding {
	case pqPlain:
		_, err = decodePlainByteArrays(p.values, vs)
	case pqPlainDictionary, pqRLEDictionary:
		err = decodeDictionary(p.values, dict, vs)
	case pqDeltaLengthByteArr:
		_, err = decodeDeltaLength(p.values, vs)
	case pqDeltaByteArray:
		err = decodeDeltaByteArray(p.values, vs)
	default:
		err = fmt.Errorf("values encoded %s, which a BYTE_ARRAY column does not use", pqName(pqEncodingNames[:], p.encoding))
	}
	if err != nil {
		return nil, 0, err
	}
	if present < n {
		return vals, len(vals) + present, nil
	}
	return append(vals, vs...), -1, nil
}

// decompress returns a page's bytes uncompressed, exactly size of them.
func (d *pqDecoder) decompress(codec int32, src []byte, size int) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case 0:
		out = src
	case 1:
		out, err = snappyDecode(src, size)
	case 2:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, int64(size)+1))
		}
	case 6:
		if d.zstd == nil {
			// One goroutine, and no output larger than a page may be.
			if d.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(pqMaxPage)); err != nil {
				return nil, err
			}
		}
		out, err = d.zstd.DecodeAll(src, nil)
	case 7:
		out, err = lz4Decode(src, size)
	default:
		return nil, fmt.Errorf("pages compressed %s, which this reader does not read (it reads UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW; pyarrow writes SNAPPY by default)", pqName(pqCodecNames[:], codec))
	}
	if err != nil {
		return nil, fmt.Errorf("%s page: %w", pqName(pqCodecNames[:], codec), err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("%s page: %d bytes uncompressed, the header says %d", pqName(pqCodecNames[:], codec), len(out), size)
	}
	return out, nil
}

// decodePlainByteArrays fills out with PLAIN byte arrays (a 4-byte
// little-endian length, then the bytes) and returns the rest of s.
func decodePlainByteArrays(s string, out []string) (string, error) {
	for i := range out {
		if len(s) < 4 {
			return "", fmt.Errorf("value %d of %d: data ends", i, len(out))
		}
		n := uint64(binary.LittleEndian.Uint32([]byte(s[:4])))
		if n > uint64(len(s)-4) {
			return "", fmt.Errorf("value %d of %d: %d bytes, %d left", i, len(out), n, len(s)-4)
		}
		out[i], s = s[4:4+n], s[4+n:]
	}
	return s, nil
}

// decodeDictionary fills out from dict by the indices in s: a byte of bit
// width, then the indices in the RLE/bit-packed hybrid.
func decodeDictionary(s string, dict []string, out []string) error {
	if len(out) == 0 {
		return nil
	}
	if dict == nil {
		return errors.New("a dictionary-encoded page before any dictionary page")
	}
	if len(s) == 0 {
		return errors.New("a dictionary-encoded page without a bit width")
	}
	idx, err := decodeHybrid([]byte(s[1:]), int(s[0]), len(out))
	if err != nil {
		return fmt.Errorf("dictionary indices: %w", err)
	}
	for i, k := range idx {
		if int(k) >= len(dict) {
			return fmt.Errorf("value %d: dictionary index %d, the dictionary holds %d", i, k, len(dict))
		}
		out[i] = dict[k]
	}
	return nil
}

// decodeDeltaLength fills out from DELTA_LENGTH_BYTE_ARRAY data: the
// lengths DELTA_BINARY_PACKED, then the bytes of every value one after
// another. It returns the rest of s.
func decodeDeltaLength(s string, out []string) (string, error) {
	lens, rest, err := decodeDeltaBinaryPacked([]byte(s), len(out))
	if err != nil {
		return "", fmt.Errorf("lengths: %w", err)
	}
	s = s[len(s)-len(rest):]
	for i, n := range lens {
		if n < 0 || n > int64(len(s)) {
			return "", fmt.Errorf("value %d: length %d, %d bytes left", i, n, len(s))
		}
		out[i], s = s[:n], s[n:]
	}
	return s, nil
}

// decodeDeltaByteArray fills out from DELTA_BYTE_ARRAY data: each value
// is a prefix of the one before it (lengths DELTA_BINARY_PACKED) followed
// by a suffix (DELTA_LENGTH_BYTE_ARRAY).
func decodeDeltaByteArray(s string, out []string) error {
	prefixes, rest, err := decodeDeltaBinaryPacked([]byte(s), len(out))
	if err != nil {
		return fmt.Errorf("prefix lengths: %w", err)
	}
	if _, err := decodeDeltaLength(s[len(s)-len(rest):], out); err != nil {
		return fmt.Errorf("suffixes: %w", err)
	}
	prev := ""
	for i, p := range prefixes {
		if p < 0 || p > int64(len(prev)) {
			return fmt.Errorf("value %d: prefix of %d bytes, the value before has %d", i, p, len(prev))
		}
		if p > 0 {
			out[i] = prev[:p] + out[i]
		}
		prev = out[i]
	}
	return nil
}

// decodeHybrid decodes n values of width bits from the RLE/bit-packed
// hybrid: runs, each a varint header whose low bit says a bit-packed run
// of header>>1 groups of eight values (least significant bit first) or a
// repeated run of header>>1 copies of one value in (width+7)/8 bytes.
func decodeHybrid(b []byte, width, n int) ([]uint32, error) {
	if width < 0 || width > 32 {
		return nil, fmt.Errorf("bit width %d", width)
	}
	out := make([]uint32, 0, n)
	for len(out) < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("data ends after %d of %d values", len(out), n)
		}
		b = b[k:]
		if h&1 == 0 { // repeated run
			count := h >> 1
			vb := (width + 7) / 8
			if len(b) < vb {
				return nil, fmt.Errorf("data ends after %d of %d values", len(out), n)
			}
			var v uint32
			for i := range vb {
				v |= uint32(b[i]) << (8 * i)
			}
			b = b[vb:]
			count = min(count, uint64(n-len(out)))
			for range count {
				out = append(out, v)
			}
			continue
		}
		groups := h >> 1
		if groups > uint64(len(b)) || groups*uint64(width) > uint64(len(b)) {
			return nil, fmt.Errorf("a bit-packed run of %d groups, %d bytes left", groups, len(b))
		}
		nb := int(groups) * width
		vals := unpackBits(b[:nb], width, int(groups)*8)
		b = b[nb:]
		out = append(out, vals[:min(len(vals), n-len(out))]...)
	}
	return out, nil
}

// unpackBits reads n values of width bits (at most 32), least significant
// bit first, from b, which holds at least n*width bits.
func unpackBits(b []byte, width, n int) []uint32 {
	out := make([]uint32, n)
	if width == 0 {
		return out
	}
	for i := range out {
		bit := i * width
		var v uint64
		for j := 0; j*8 < bit%8+width; j++ {
			v |= uint64(b[bit/8+j]) << (8 * j)
		}
		out[i] = uint32(v>>(bit%8)) & uint32(1<<width-1)
	}
	return out
}

// decodeDeltaBinaryPacked decodes n int64 values from DELTA_BINARY_PACKED
// data and returns them with the bytes after them: a header (block size,
// miniblocks per block, value count, first value), then blocks, each a
// minimum delta, a bit width per miniblock and the miniblocks' deltas
// above the minimum, bit-packed.
func decodeDeltaBinaryPacked(b []byte, n int) ([]int64, []byte, error) {
	var hdr [3]uint64
	for i := range hdr {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, errors.New("header ends early")
		}
		hdr[i], b = v, b[k:]
	}
	blockSize, miniblocks, count := hdr[0], hdr[1], hdr[2]
	if blockSize == 0 || blockSize%128 != 0 || miniblocks == 0 || blockSize%miniblocks != 0 || (blockSize/miniblocks)%32 != 0 {
		return nil, nil, fmt.Errorf("block size %d with %d miniblocks", blockSize, miniblocks)
	}
	if count != uint64(n) {
		return nil, nil, fmt.Errorf("%d values, want %d", count, n)
	}
	first, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, errors.New("header ends early")
	}
	b = b[k:]
	out := make([]int64, 0, n)
	if n == 0 {
		return out, b, nil
	}
	out = append(out, first)
	per := int(blockSize / miniblocks)
	for len(out) < n {
		minDelta, k := binary.Varint(b)
		if k <= 0 || uint64(len(b)-k) < miniblocks {
			return nil, nil, fmt.Errorf("block ends early after %d of %d values", len(out), n)
		}
		widths := b[k : k+int(miniblocks)]
		b = b[k+int(miniblocks):]
		for _, w := range widths {
			if len(out) == n {
				break
			}
			if w > 64 {
				return nil, nil, fmt.Errorf("miniblock bit width %d", w)
			}
			nb := per * int(w) / 8
			if nb > len(b) {
				return nil, nil, fmt.Errorf("miniblock ends early after %d of %d values", len(out), n)
			}
			for i := 0; i < per && len(out) < n; i++ {
				d := readBits64(b, i*int(w), int(w))
				// Wrapping arithmetic, as the specification asks.
				out = append(out, out[len(out)-1]+minDelta+int64(d))
			}
			b = b[nb:]
		}
	}
	return out, b, nil
}

// readBits64 reads width bits (at most 64) at bit offset off, least
// significant bit first.
func readBits64(b []byte, off, width int) uint64 {
	var v uint64
	for i := 0; i < width; {
		byteIdx, shift := (off+i)/8, (off+i)%8
		take := min(8-shift, width-i)
		v |= uint64(b[byteIdx]>>shift&byte(1<<take-1)) << i
		i += take
	}
	return v
}
