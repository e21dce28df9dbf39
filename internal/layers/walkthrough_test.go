package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notGo are the backticked words of the checked documents (namingDocs) that
// look like Go identifiers but name something else, each with what it is.
var notGo = map[string]string{
	"send": "a frame type", "register": "a frame type", "message": "a frame type",
	"query": "a frame type", "claim": "a frame type",
	"routed": "a status", "acked": "a status", "brokered": "a ledger event",
	"accepted.unverified": "an ack status", "accepted.queued_remote": "an ack status", "delivered.websocket": "an ack status",
	"delivered.context": "an ack status", "delivered.verified": "an ack status",
	"role_mismatch": "a code", "bad_header": "a code", "invalid_target": "a code",
	"seq_reused": "a warning", "seq_gap": "a warning", "expired_session": "a code",
	"comms_journal": "a ledger table", "comms_journal_failed_at": "a ledger index",
	"Host": "an HTTP header", "Origin": "an HTTP header", "hm": "the binary",
	"hub.json": "a file", "settings.json": "a file", "hub.go": "a file",
	"msgargs.go": "a file", "http.Server.Shutdown": "the standard library's",
	"typed": "a stage", "stuck": "a stage", "submitted": "a stage", "recorded": "a status",
	"failed": "a status", "ack_status": "a ledger column", "status": "a ledger column",
	"starting": "a pane state", "ready": "a pane state", "busy": "a pane state",
	"waiting_for_human": "a pane state", "exited": "a pane state", "remote": "a transport",
	"asyncRewake": "a Claude Code hook setting", "waitMs": "a frame field",
	"comms_signals": "a ledger table", "comms_obligations": "a ledger table",
	"context.Context": "the standard library's", "goleak.VerifyTestMain": "a test library's",
	"TestMain": "a test binary's entry point",
}

// namingDocs are the documents whose Go names the test below checks.
var namingDocs = []string{"architecture.md", "glossary.md", "design.md"}

// goDecls indexes every declaration of the module's non-test Go files by
// the names a document may use for it: "F", "pkg.F", "T.M", "pkg.T.M" (for
// funcs, methods, types, struct fields, interface methods, vars and
// consts) and each package's name; each with the files that declare it.
func goDecls(t *testing.T, root string) map[string][]string {
	t.Helper()
	decls := map[string][]string{}
	add := func(file string, names ...string) {
		for _, n := range names {
			if !slices.Contains(decls[n], file) {
				decls[n] = append(decls[n], file)
			}
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		pkg := f.Name.Name
		add(rel, pkg)
		member := func(typ, name string) { add(rel, name, typ+"."+name, pkg+"."+typ+"."+name) }
		top := func(name string) { add(rel, name, pkg+"."+name) }
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					top(d.Name.Name)
					continue
				}
				member(recvType(d.Recv.List[0].Type), d.Name.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						top(s.Name.Name)
						for _, m := range fieldsOf(s.Type) {
							member(s.Name.Name, m)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							top(n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return decls
}

// recvType is the type name of a method receiver.
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// fieldsOf names a struct's fields or an interface's methods.
func fieldsOf(e ast.Expr) []string {
	var list *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

// moduleRoot is the directory of go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

var (
	fenced     = regexp.MustCompile("(?s)```.*?```")
	backticked = regexp.MustCompile("`([^`\n]+)`")
	goIdent    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	// placed is a name followed by the file it lives in: "`name`
	// (`file.go`", "`name`, `file.go`" or "`name` in `file.go`".
	placed = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`(?:\\s*\\(|,\\s*|\\s+in\\s+)`([^`]+\\.go)`")
)

// TestDocNamesExist checks that every Go name the documents of namingDocs
// put in backticks is declared in the module (notGo
// aside), and that a name followed by its file ("`name` (`dir/file.go`)",
// "`name`, `dir/file.go`" or "`name` in `dir/file.go`") is declared in that
// file; a file named without a directory is matched by its base name.
func TestDocNamesExist(t *testing.T) {
	root := moduleRoot(t)
	decls := goDecls(t, root)
	for _, name := range namingDocs {
		t.Run(name, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(root, "docs", name))
			if err != nil {
				t.Fatal(err)
			}
			checkNames(t, "docs/"+name, fenced.ReplaceAllString(string(doc), ""), decls)
		})
	}
}

// checkNames reports the Go names of text (the document doc) that decls
// does not hold, or not in the file the text says.
func checkNames(t *testing.T, doc, text string, decls map[string][]string) {
	checked := 0
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		name := m[1]
		if _, skip := notGo[name]; skip || !goIdent.MatchString(name) {
			continue
		}
		checked++
		if len(decls[name]) == 0 {
			t.Errorf("%s names `%s`, which nothing in the module declares", doc, name)
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d names in %s; the extraction is broken", checked, doc)
	}
	for _, m := range placed.FindAllStringSubmatch(text, -1) {
		name, file := m[1], m[2]
		if _, skip := notGo[name]; skip || len(decls[name]) == 0 {
			continue // reported above
		}
		if !slices.ContainsFunc(decls[name], func(f string) bool {
			return f == file || !strings.Contains(file, "/") && path.Base(f) == file
		}) {
			t.Errorf("%s puts `%s` in %s, but it is declared in %s", doc, name, file, strings.Join(decls[name], ", "))
		}
	}
}
