package datasets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// longBenchParquetRow is the projection of a LongBench-v2 parquet file the
// reader decodes: only these columns are read, whatever else the file
// holds. Pointers tell a null apart from an empty string. The tags name
// longBenchFields in order (TestLongBenchV2Formats fails if they do not).
type longBenchParquetRow struct {
	Context  *string `parquet:"context,optional"`
	Question *string `parquet:"question,optional"`
	ChoiceA  *string `parquet:"choice_A,optional"`
	ChoiceB  *string `parquet:"choice_B,optional"`
	ChoiceC  *string `parquet:"choice_C,optional"`
	ChoiceD  *string `parquet:"choice_D,optional"`
}

// longBenchParquetBatch is how many rows one Read decodes: enough to
// amortise the call, few enough that a batch of long contexts (a
// LongBench-v2 context runs to megabytes) stays small beside the rows kept.
const longBenchParquetBatch = 16

// readLongBenchParquet reads a parquet file as sglang's pd.read_parquet
// then to_dict(orient="records") does, in file order. Each prompt column
// must be a string (BYTE_ARRAY) column that is not repeated; a null value
// is an error naming its row (counted from 0, as pandas' index) and
// column. A file the library cannot decode is an error, never a crash.
func readLongBenchParquet(path string) (rows []longBenchRow, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("longbench-v2: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("longbench-v2 %s: %w", path, err)
	}
	// parquet-go panics on some malformed files (slice bounds out of range
	// in the page decoders; testdata/fuzz/FuzzLongBenchV2File holds two)
	// rather than returning an error; a bad file must fail with its name,
	// not stop the process. Its default (synchronous) read mode decodes on
	// this goroutine, so the recover sees every such panic.
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("longbench-v2 %s: not a readable parquet file: %v", path, p)
		}
	}()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("longbench-v2 %s: not a readable parquet file: %w", path, err)
	}
	if err := checkLongBenchSchema(pf.Schema()); err != nil {
		return nil, fmt.Errorf("longbench-v2 %s: %w", path, err)
	}
	r := parquet.NewGenericReader[longBenchParquetRow](pf)
	defer r.Close()
	// The footer's row count sizes the slice, capped: a damaged footer
	// must not allocate what the file does not hold.
	rows = make([]longBenchRow, 0, min(max(pf.NumRows(), 0), 1<<12))
	batch := make([]longBenchParquetRow, longBenchParquetBatch)
	for {
		n, rerr := r.Read(batch)
		for _, b := range batch[:n] {
			vals := [...]*string{b.Context, b.Question, b.ChoiceA, b.ChoiceB, b.ChoiceC, b.ChoiceD}
			var row longBenchRow
			for i, v := range vals {
				if v == nil {
					return nil, fmt.Errorf("longbench-v2 %s: row %d: column %q is null, want a string", path, len(rows), longBenchFields[i])
				}
				row[i] = *v
			}
			rows = append(rows, row)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("longbench-v2 %s: row %d: %w", path, len(rows), rerr)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("longbench-v2 %s: no rows", path)
	}
	return rows, nil
}

// checkLongBenchSchema makes sure every prompt field is a top-level,
// non-repeated string column. Without the check the reader would fill a
// missing column with nulls and convert a number column to its digits.
func checkLongBenchSchema(s *parquet.Schema) error {
	var have []string
	for _, f := range s.Fields() {
		have = append(have, f.Name())
	}
	for _, name := range longBenchFields {
		col, ok := s.Lookup(name)
		if !ok {
			if slices.Contains(have, name) {
				return fmt.Errorf("column %q is a group, want a string (BYTE_ARRAY) column", name)
			}
			return fmt.Errorf("no column %q (columns: %s)", name, strings.Join(have, ", "))
		}
		if k := col.Node.Type().Kind(); k != parquet.ByteArray || col.MaxRepetitionLevel > 0 {
			what := k.String()
			if col.MaxRepetitionLevel > 0 {
				what = "a repeated " + what
			}
			return fmt.Errorf("column %q is %s, want a string (BYTE_ARRAY) column", name, what)
		}
	}
	return nil
}
