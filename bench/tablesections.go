package bench

import (
	"bufio"
	"io"
)

// TableRow is one row of the console table, label and value as printed.
type TableRow struct{ Label, Value string }

// TableSection is the rows under one line of the console table that is
// not a row: a heading such as "Server metrics" or "Reasoning and
// Answer", its padding trimmed.
type TableSection struct {
	Title string
	Rows  []TableRow
}

// TableSections is the console table as WriteTable prints it, cut at its
// headings. The HTML report shows these rows instead of formatting the
// summary's numbers again, so that the page and the console agree by
// construction.
func (s *Summary) TableSections() []TableSection {
	var out []TableSection
	_ = s.writeTable(&tableWriter{w: bufio.NewWriter(io.Discard), sections: &out})
	return out
}
