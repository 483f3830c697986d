package datasets

import (
	"errors"
	"fmt"
	"os"
)

// readLongBenchParquet reads a parquet file as sglang's pd.read_parquet
// then to_dict(orient="records") does, in file order. Each prompt column
// must be a string (BYTE_ARRAY) column that is not repeated; a null value
// is an error naming its row (counted from 0, as pandas' index) and
// column. A file the reader cannot decode is an error, never a crash.
func readLongBenchParquet(path string) ([]longBenchRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("longbench-v2: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("longbench-v2 %s: %w", path, err)
	}
	var rows []longBenchRow
	err = readParquetStrings(f, fi.Size(), longBenchFields[:], func(vals []string) {
		rows = append(rows, longBenchRow(vals))
	})
	var schemaErr *parquetSchemaError
	var nullErr *parquetNullError
	switch {
	case errors.As(err, &schemaErr) || errors.As(err, &nullErr):
		return nil, fmt.Errorf("longbench-v2 %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("longbench-v2 %s: not a readable parquet file: %w", path, err)
	case len(rows) == 0:
		return nil, fmt.Errorf("longbench-v2 %s: no rows", path)
	}
	return rows, nil
}
