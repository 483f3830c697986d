package datasets

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
)

// maxLine caps one JSONL line: MMMU rows carry base64 images.
const maxLine = 256 << 20

// readJSONL calls fn for every non-blank line with its 1-based number.
// Errors name the file and the line.
func readJSONL(kind, path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n, rows := 0, 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rows++
		if err := fn(line); err != nil {
			return fmt.Errorf("%s %s:%d: %w", kind, path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s %s:%d: %w", kind, path, n+1, err)
	}
	if rows == 0 {
		return fmt.Errorf("%s %s: no rows", kind, path)
	}
	return nil
}
