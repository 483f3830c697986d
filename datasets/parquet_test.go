package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// pqTestRow is a row of the files TestParquetStrings writes: the two
// string columns the reader is asked for, behind a number column and a
// group (whose leaves come first in a row group's column chunks), so the
// reader must find its columns by the schema, not by their place.
type pqTestRow struct {
	N     int64   `parquet:"n"`
	Group pqGroup `parquet:"g"`
	A     *string `parquet:"sa"`
	B     *string `parquet:"sb"`
}

type pqGroup struct {
	X string `parquet:"x"`
	Y int32  `parquet:"y"`
}

// pqTestValues are strings that exercise each encoding: repeats (a
// dictionary), shared prefixes (DELTA_BYTE_ARRAY), empty strings, and
// values of several kilobytes that fill a page on their own.
func pqTestValues(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"context", "question", "choice", "answer", "the", "über", ""}
	out := make([]string, n)
	for i := range out {
		switch r.IntN(5) {
		case 0:
			out[i] = words[r.IntN(len(words))]
		case 1:
			if i > 0 {
				out[i] = out[i-1] + fmt.Sprint(i)
				break
			}
			fallthrough
		case 2:
			out[i] = strings.Repeat(words[r.IntN(len(words))]+" ", 100+r.IntN(1500))
		default:
			b := make([]byte, r.IntN(40))
			for j := range b {
				b[j] = byte(r.UintN(256))
			}
			out[i] = string(b)
		}
	}
	return out
}

// writePQ writes rows with parquet-go, the file format's other
// implementation here: sa and sb are optional or required per optional, both
// in encoding enc; three row groups of 128 rows at most, and small pages
// so that a column chunk holds many.
func writePQ(t testing.TB, rows []pqTestRow, optional bool, enc encoding.Encoding, codec compress.Codec, version int) []byte {
	t.Helper()
	str := func() parquet.Node {
		n := parquet.Encoded(parquet.String(), enc)
		if optional {
			return parquet.Optional(n)
		}
		return parquet.Required(n)
	}
	// A Group orders its fields by name: g, n, sa, sb.
	schema := parquet.NewSchema("row", parquet.Group{
		"n":  parquet.Int(64),
		"g":  parquet.Group{"x": parquet.String(), "y": parquet.Int(32)},
		"sa": str(),
		"sb": str(),
	})
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[pqTestRow](&buf, schema, parquet.Compression(codec), parquet.DataPageVersion(version),
		parquet.PageBufferSize(2048), parquet.MaxRowsPerRowGroup(128))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readPQ(b []byte, names ...string) ([][]string, error) {
	var got [][]string
	err := readParquetStrings(bytes.NewReader(b), int64(len(b)), names, func(v []string) {
		got = append(got, slices.Clone(v))
	})
	return got, err
}

// TestParquetStrings: every codec, encoding and data page version the
// reader takes, on files parquet-go writes, reads back the rows written,
// in order, across row groups and pages.
func TestParquetStrings(t *testing.T) {
	t.Parallel() // one of the slowest tests, independent of the rest
	as, bs := pqTestValues(300, 1), pqTestValues(300, 2)
	rows := make([]pqTestRow, len(as))
	want := make([][]string, len(as))
	for i := range rows {
		rows[i] = pqTestRow{N: int64(i), Group: pqGroup{X: "x", Y: int32(i)}, A: &as[i], B: &bs[i]}
		want[i] = []string{bs[i], as[i]}
	}
	codecs := []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw}
	encodings := []encoding.Encoding{&parquet.Plain, &parquet.RLEDictionary, &parquet.DeltaLengthByteArray, &parquet.DeltaByteArray}
	// Under -race, a quarter of the 80 combinations (RaceEnabled): each
	// pair of codec and encoding once, with the page version and
	// optionality turning over between pairs.
	for ci, codec := range codecs {
		for ei, enc := range encodings {
			for vi, version := range []int{1, 2} {
				for oi, optional := range []bool{true, false} {
					if RaceEnabled && (ci+ei+2*vi+oi)%4 != 0 {
						continue
					}
					name := fmt.Sprintf("%s/%s/v%d/optional=%v", codec.CompressionCodec(), enc.Encoding(), version, optional)
					t.Run(name, func(t *testing.T) {
						b := writePQ(t, rows, optional, enc, codec, version)
						got, err := readPQ(b, "sb", "sa")
						if err != nil {
							t.Fatalf("readParquetStrings: %v", err)
						}
						if d := cmp.Diff(want, got); d != "" {
							t.Errorf("rows differ (-want +got):\n%s", d)
						}
					})
				}
			}
		}
	}
}

// TestParquetStringsRefuses: a null names its row across row groups, a
// codec the reader does not take names itself, and every column problem
// is a schema error, not an unreadable file.
func TestParquetStringsRefuses(t *testing.T) {
	vals := pqTestValues(300, 3)
	rows := make([]pqTestRow, len(vals))
	for i := range rows {
		rows[i] = pqTestRow{A: &vals[i], B: &vals[i]}
	}
	rows[200].B, rows[201].A, rows[250].A = nil, nil, nil
	b := writePQ(t, rows, true, &parquet.RLEDictionary, &parquet.Snappy, 1)
	_, err := readPQ(b, "sa", "sb")
	var null *parquetNullError
	if !errors.As(err, &null) || *null != (parquetNullError{Row: 200, Column: "sb"}) {
		t.Errorf("null at row 200 of sb: error %v, want a parquetNullError at row 200, column sb", err)
	}

	b = writePQ(t, rows[:10], false, &parquet.Plain, &parquet.Brotli, 1)
	if _, err := readPQ(b, "sa"); err == nil || !strings.Contains(err.Error(), "BROTLI") {
		t.Errorf("a BROTLI file: error %v, want one naming BROTLI", err)
	}

	b = writePQ(t, rows[:10], false, &parquet.Plain, &parquet.Snappy, 1)
	for _, tc := range []struct{ column, want string }{
		{"nope", `no column "nope" (columns: g, n, sa, sb)`},
		{"g", `column "g" is a group`},
		{"n", `column "n" is INT64, want a string`},
		{"x", `no column "x"`}, // a leaf of a group is not a top-level column
	} {
		_, err := readPQ(b, "sa", tc.column)
		var schema *parquetSchemaError
		if !errors.As(err, &schema) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("column %q: error %v, want a schema error containing %q", tc.column, err, tc.want)
		}
	}
}

// FuzzParquetStrings: whatever the bytes, the reader returns rows or an
// error; it never panics. The seeds are small files of every codec,
// encoding and page version TestParquetStrings writes.
func FuzzParquetStrings(f *testing.F) {
	vals := pqTestValues(12, 4)
	rows := make([]pqTestRow, len(vals))
	for i := range rows {
		rows[i] = pqTestRow{A: &vals[i], B: &vals[len(vals)-1-i]}
	}
	rows[7].A = nil
	for _, codec := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Lz4Raw} {
		for _, enc := range []encoding.Encoding{&parquet.Plain, &parquet.RLEDictionary, &parquet.DeltaLengthByteArray, &parquet.DeltaByteArray} {
			f.Add(writePQ(f, rows, true, enc, codec, 1))
			f.Add(writePQ(f, rows[:5], false, enc, codec, 2))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readPQ(b, "sa", "sb")
		if err == nil && len(got) > 0 && len(got[0]) != 2 {
			t.Errorf("a row of %d values, want 2", len(got[0]))
		}
	})
}
