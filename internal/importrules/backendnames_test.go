package importrules

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servingprobe/servingprobe/prober"
)

// backendChecks returns one line per place in f where code outside prober
// decides by a backend's name or protocol instead of a prober.BackendInfo
// trait, or lists backend names of its own: a prober.Protocol* constant,
// a name compared (==, !=, a switch case, a strings function) with
// something that mentions a backend, or a name inside a literal declared
// under a backend-ish name. names are the backend names. It is pure, so
// its own test feeds it the checks it must catch.
func backendChecks(fset *token.FileSet, f *ast.File, names []string) []string {
	isName := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		v, err := strconv.Unquote(lit.Value)
		return err == nil && slices.Contains(names, v)
	}
	text := func(e ast.Node) string {
		var b strings.Builder
		_ = printer.Fprint(&b, token.NewFileSet(), e)
		return b.String()
	}
	backendish := func(e ast.Node) bool { return strings.Contains(strings.ToLower(text(e)), "backend") }
	var out []string
	add := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "prober" && strings.HasPrefix(n.Sel.Name, "Protocol") {
				add(n, "decides by prober."+n.Sel.Name+": use a BackendInfo trait")
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				break
			}
			if isName(n.X) && backendish(n.Y) || isName(n.Y) && backendish(n.X) {
				add(n, "compares a backend name: "+text(n))
			}
		case *ast.SwitchStmt:
			if n.Tag == nil || !backendish(n.Tag) {
				break
			}
			for _, s := range n.Body.List {
				if slices.ContainsFunc(s.(*ast.CaseClause).List, isName) {
					add(s, "switches on a backend name: "+text(n.Tag))
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				break
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "strings" {
				break
			}
			if slices.ContainsFunc(n.Args, isName) && slices.ContainsFunc(n.Args, func(a ast.Expr) bool { return !isName(a) && backendish(a) }) {
				add(n, "matches a backend name: "+text(n))
			}
		case *ast.ValueSpec:
			if !slices.ContainsFunc(n.Names, func(id *ast.Ident) bool { return backendish(id) }) {
				break
			}
			for _, v := range n.Values {
				found := false
				ast.Inspect(v, func(m ast.Node) bool {
					if e, ok := m.(ast.Expr); ok && isName(e) {
						found = true
					}
					return !found
				})
				if found {
					add(n, "lists backend names of its own: "+n.Names[0].Name)
				}
			}
		}
		return true
	})
	return out
}

func TestBackendChecks(t *testing.T) {
	names := []string{"sglang", "trt", "gserver"}
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"a protocol constant", `if info.Protocol != prober.ProtocolTRT {}`, 1},
		{"a name compared", `if s.Backend == "sglang" {}; if "trt" != backend {}`, 2},
		{"a name switched on", `switch t.Backend { case "trt", "x": ; case "y": }`, 1},
		{"a name matched", `_ = strings.Contains(s.Backend, "sglang")`, 1},
		{"a list of names", `var unsupportedBackends = map[string]string{"gserver": "why"}`, 1},
		{"a trait", `if info.NoModelList && p.Info.FlushCacheInCI {}`, 0},
		{"a default is not a check", `s := Spec{Backend: "sglang"}; backend := "trt"`, 0},
		{"a name that is something else", `if s.Dataset == "sglang" {}; var engines = []string{"sglang"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package x\n"
			if strings.HasPrefix(tc.src, "var ") {
				src += tc.src
			} else {
				src += "func f() {\n" + tc.src + "\n}"
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := backendChecks(fset, f, names); len(got) != tc.want {
				t.Errorf("backendChecks(%s) = %q, want %d", tc.src, got, tc.want)
			}
		})
	}
}

// TestNoBackendNameChecks holds the module's code outside prober to
// deciding by BackendInfo traits: prober's table is the one list of
// backend names and the one place that knows what each one does.
func TestNoBackendNameChecks(t *testing.T) {
	names := append(prober.BackendNames(), "gserver")
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "prober" || d.Name() == "testdata" || d.Name() == "node_modules" || rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, v := range backendChecks(fset, f, names) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d files under %s", files, root)
	}
}
