package datasets_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"

	"github.com/servingprobe/servingprobe/datasets"
)

// longBenchParquet is a LongBench-v2 row as the hub's parquet export lays it
// out: every data.json field, context last. The prompt fields are optional
// (nullable) as pandas writes object columns, dictionary-encoded and in
// version 1 data pages with snappy, as pyarrow writes by default.
type longBenchParquet struct {
	ID       string  `parquet:"_id,dict"`
	Domain   string  `parquet:"domain,dict"`
	Question *string `parquet:"question,optional,dict"`
	ChoiceA  *string `parquet:"choice_A,optional,dict"`
	ChoiceB  *string `parquet:"choice_B,optional,dict"`
	ChoiceC  *string `parquet:"choice_C,optional,dict"`
	ChoiceD  *string `parquet:"choice_D,optional,dict"`
	Answer   string  `parquet:"answer,dict"`
	Context  *string `parquet:"context,optional"`
}

// longBenchRows decodes longBenchFile, the rows the golden files were made
// from, so that every format below carries exactly the same rows.
func longBenchRows(t testing.TB) []map[string]string {
	t.Helper()
	var rows []map[string]string
	for line := range strings.SplitSeq(strings.TrimSpace(longBenchFile), "\n") {
		var r map[string]string
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

func toParquet(r map[string]string) longBenchParquet {
	s := func(k string) *string { v := r[k]; return &v }
	return longBenchParquet{ID: r["_id"], Domain: r["domain"], Question: s("question"), ChoiceA: s("choice_A"),
		ChoiceB: s("choice_B"), ChoiceC: s("choice_C"), ChoiceD: s("choice_D"), Answer: r["answer"], Context: s("context")}
}

// writeParquet writes rows of type T with the writer options pyarrow
// uses by default, two rows per row group so that a file of three rows
// has two groups.
func writeParquet[T any](t testing.TB, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&snappy.Codec{}), parquet.DataPageVersion(1), parquet.MaxRowsPerRowGroup(2))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLongBenchV2Formats: the hub's data.json (a pretty-printed JSON
// array) and a parquet export of the golden rows give exactly the prompts
// the JSON-lines file gives, in testdata/golden: the same rows in the
// same order, so the same seed draws the same examples.
func TestLongBenchV2Formats(t *testing.T) {
	tok := qwen3(t)
	rows := longBenchRows(t)
	dir := t.TempDir()
	array, err := json.MarshalIndent(rows, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	arrayPath := filepath.Join(dir, "data.json")
	if err := os.WriteFile(arrayPath, append([]byte("\n"), array...), 0o600); err != nil {
		t.Fatal(err)
	}
	pq := make([]longBenchParquet, len(rows))
	for i, r := range rows {
		pq[i] = toParquet(r)
	}
	parquetPath := filepath.Join(dir, "train-00000-of-00001.parquet")
	writeParquet(t, parquetPath, pq)
	if f, err := os.Open(parquetPath); err != nil {
		t.Fatal(err)
	} else {
		defer f.Close()
		fi, _ := f.Stat()
		pf, err := parquet.OpenFile(f, fi.Size())
		if err != nil || len(pf.RowGroups()) != 2 {
			t.Fatalf("%s: %v, want 2 row groups (so that reading crosses one): %v", parquetPath, len(pf.RowGroups()), err)
		}
	}
	for _, golden := range []struct {
		name string
		mod  func(o *datasets.Options)
	}{
		{"longbench-v2", func(*datasets.Options) {}},
		{"longbench-v2-context", func(o *datasets.Options) { o.SharegptContextLen, o.SharegptOutputLen = 64, 4 }},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", "golden", golden.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{arrayPath, parquetPath} {
			o := datasets.DefaultOptions()
			o.DatasetPath = path
			golden.mod(&o)
			got, err := json.MarshalIndent(generate(t, mustNew(t, "longbench-v2", o, tok), 10, 7), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)+"\n"); d != "" {
				t.Errorf("%s from %s differs from the JSON lines' golden (-want +got):\n%s", golden.name, filepath.Base(path), d)
			}
		}
	}
}

// TestLongBenchV2FileErrors: bad input is refused naming the file, the line
// (JSON lines, a JSON array's entry) or row (parquet) and the field.
func TestLongBenchV2FileErrors(t *testing.T) {
	tok := qwen3(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeTestFile(t, dir, name, body) }
	const ok = `{"context": "c", "question": "q", "choice_A": "a", "choice_B": "b", "choice_C": "c", "choice_D": "d"}`
	// with is ok with field set to the raw JSON value, or removed for "".
	with := func(field, value string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ok), &m); err != nil {
			t.Fatal(err)
		}
		if m[field] = json.RawMessage(value); value == "" {
			delete(m, field)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	without := func(field string) string { return with(field, "") }
	type cols5 struct { // no choice_D
		Context  string `parquet:"context"`
		Question string `parquet:"question"`
		ChoiceA  string `parquet:"choice_A"`
		ChoiceB  string `parquet:"choice_B"`
		ChoiceC  string `parquet:"choice_C"`
	}
	type intCol struct {
		Context  string `parquet:"context"`
		Question string `parquet:"question"`
		ChoiceA  int64  `parquet:"choice_A"`
		ChoiceB  string `parquet:"choice_B"`
		ChoiceC  string `parquet:"choice_C"`
		ChoiceD  string `parquet:"choice_D"`
	}
	type listCol struct {
		Context  []string `parquet:"context,list"`
		Question string   `parquet:"question"`
		ChoiceA  string   `parquet:"choice_A"`
		ChoiceB  string   `parquet:"choice_B"`
		ChoiceC  string   `parquet:"choice_C"`
		ChoiceD  string   `parquet:"choice_D"`
	}
	type repeatedCol struct {
		Context  string   `parquet:"context"`
		Question string   `parquet:"question"`
		ChoiceA  []string `parquet:"choice_A"`
		ChoiceB  string   `parquet:"choice_B"`
		ChoiceC  string   `parquet:"choice_C"`
		ChoiceD  string   `parquet:"choice_D"`
	}
	rows := longBenchRows(t)
	pq := make([]longBenchParquet, len(rows))
	for i, r := range rows {
		pq[i] = toParquet(r)
	}
	pq[2].Question = nil
	nullParquet := filepath.Join(dir, "null.parquet")
	writeParquet(t, nullParquet, pq)
	missingCol := filepath.Join(dir, "missing.parquet")
	writeParquet(t, missingCol, []cols5{{"c", "q", "a", "b", "c"}})
	intParquet := filepath.Join(dir, "int.parquet")
	writeParquet(t, intParquet, []intCol{{"c", "q", 1, "b", "c", "d"}})
	listParquet := filepath.Join(dir, "list.parquet")
	writeParquet(t, listParquet, []listCol{{[]string{"c"}, "q", "a", "b", "c", "d"}})
	repeatedParquet := filepath.Join(dir, "repeated.parquet")
	writeParquet(t, repeatedParquet, []repeatedCol{{"c", "q", []string{"a", "A"}, "b", "c", "d"}})
	emptyParquet := filepath.Join(dir, "empty.parquet")
	writeParquet(t, emptyParquet, []longBenchParquet{})
	good := filepath.Join(dir, "good.parquet")
	writeParquet(t, good, pq[:2])
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := write("truncated.parquet", string(b[:len(b)/2]))
	garbage := write("garbage.parquet", "PAR1 this is not a parquet file PAR1")

	cases := []struct {
		name, path string
		want       []string // substrings of the error
	}{
		{"no path", "", []string{"dataset path is required", datasets.LongBenchV2Repo, datasets.LongBenchV2File}},
		{"no file", filepath.Join(dir, "nope.jsonl"), []string{"nope.jsonl", "no such file"}},
		{"empty", write("empty.jsonl", "\n  \n"), []string{"empty.jsonl", "no rows"}},
		// JSON lines: the line, counted from 1 with blank lines.
		{"lines missing field", write("missing.jsonl", ok+"\n\n"+without("choice_D")+"\n"), []string{"missing.jsonl:3", `missing field "choice_D"`}},
		{"lines number", write("number.jsonl", with("choice_A", "5")+"\n"), []string{"number.jsonl:1", `field "choice_A" is a number, want a string`}},
		{"lines null", write("null.jsonl", ok+"\n"+with("question", "null")+"\n"), []string{"null.jsonl:2", `field "question" is null`}},
		{"lines list", write("list.jsonl", with("context", `["c"]`)+"\n"), []string{"list.jsonl:1", `field "context" is a list`}},
		{"lines not object", write("scalar.jsonl", ok+"\n5\n"), []string{"scalar.jsonl:2", "not a JSON object"}},
		{"lines bad JSON", write("bad.jsonl", ok+"\n"+ok+"\n{\"context\": \n"), []string{"bad.jsonl:3"}},
		// A JSON array (the hub's data.json): the entry counted from 0 and
		// the line it starts on.
		{"array missing field", write("missing.json", "[\n  "+ok+",\n\n  "+without("context")+"\n]\n"), []string{"missing.json: entry 1 (line 4)", `missing field "context"`}},
		{"array bool", write("bool.json", "[\n"+ok+",\n"+ok+",\n"+with("choice_B", "true")+"]"), []string{"bool.json: entry 2 (line 4)", `field "choice_B" is a boolean`}},
		{"array syntax", write("syntax.json", "[\n"+ok+",\n{\"context\": \"c\",\n \"question\" \"q\"}\n]"), []string{"syntax.json: entry 1 (line 3)", "invalid character"}},
		{"array not object", write("nested.json", "[[1]]"), []string{"nested.json: entry 0 (line 1)", "not a JSON object"}},
		{"array truncated", write("cut.json", "[\n"+ok+",\n"+ok), []string{"cut.json", "entry 2", "not closed"}},
		{"array trailing", write("trailing.json", "[\n"+ok+"\n]\n\n{}\n"), []string{"trailing.json: line 5", "after the array"}},
		{"array empty", write("none.json", " [ ] "), []string{"none.json", "no rows"}},
		// Parquet: the row counted from 0 (pandas' index) and the column.
		{"parquet null", nullParquet, []string{"null.parquet: row 2", `column "question" is null`}},
		{"parquet no column", missingCol, []string{"missing.parquet", `no column "choice_D"`, "columns: context, question, choice_A, choice_B, choice_C)"}},
		{"parquet int column", intParquet, []string{"int.parquet", `column "choice_A" is INT64, want a string`}},
		{"parquet list column", listParquet, []string{"list.parquet", `column "context" is a group`}},
		{"parquet repeated column", repeatedParquet, []string{"repeated.parquet", `column "choice_A" is a repeated BYTE_ARRAY, want a string`}},
		{"parquet no rows", emptyParquet, []string{"empty.parquet", "no rows"}},
		{"parquet truncated", truncated, []string{"truncated.parquet", "not a readable parquet file"}},
		{"parquet garbage", garbage, []string{"garbage.parquet", "not a readable parquet file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := datasets.DefaultOptions()
			o.DatasetPath = tc.path
			_, err := datasets.New("longbench-v2", o, tok)
			if err == nil {
				t.Fatalf("New(longbench-v2, %s) succeeded, want an error", tc.path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New(longbench-v2, %s) error %q does not contain %q", filepath.Base(tc.path), err, w)
				}
			}
		})
	}
}

// FuzzLongBenchV2File: whatever a file holds, as JSON or as parquet, New
// returns a dataset or an error naming the file; it never panics.
func FuzzLongBenchV2File(f *testing.F) {
	rows := longBenchRows(f)
	array, err := json.Marshal(rows)
	if err != nil {
		f.Fatal(err)
	}
	pq := filepath.Join(f.TempDir(), "seed.parquet")
	pqRows := make([]longBenchParquet, len(rows))
	for i, r := range rows {
		pqRows[i] = toParquet(r)
	}
	writeParquet(f, pq, pqRows)
	pqBytes, err := os.ReadFile(pq)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(longBenchFile), false)
	f.Add(array, false)
	f.Add([]byte("[\n{\"context\": 1},\n"), false)
	f.Add(pqBytes, true)
	f.Add(pqBytes[:len(pqBytes)-9], true)
	tok := qwen3(f)
	f.Fuzz(func(t *testing.T, data []byte, isParquet bool) {
		name := "rows.json"
		if isParquet {
			name = "rows.parquet"
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		o := datasets.DefaultOptions()
		o.DatasetPath = path
		d, err := datasets.New("longbench-v2", o, tok)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			return
		}
		ps, err := d.Generate(0, seeded(1))
		if err != nil || len(ps) == 0 {
			t.Errorf("a file New accepts gives %d prompts, error %v", len(ps), err)
		}
	})
}
