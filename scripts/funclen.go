//go:build ignore

// funclen lists the longest functions of the Go packages under the given
// folders (test files left out), longest first, and the non-test lines of
// each package, so that issue 20's bounds can be checked from the code:
// no package over ~3,500 lines, no function over ~120 lines without a
// reason written beside it.
//
//	go run scripts/funclen.go [-n 20] [-over 120] DIR...
//
// A function's length is its lines from "func" to its closing brace, doc
// comment left out. With -over, it exits 1 when a function is longer than
// that and its doc comment does not give the reason (the repository's
// comments write it as "It is longer than ... on purpose: ...").
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type fn struct {
	pos    string
	name   string
	lines  int
	reason bool
}

func main() {
	top := flag.Int("n", 20, "how many of the longest functions to list")
	over := flag.Int("over", 0, "fail when a function without a written reason is longer than this (0: never)")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	fset := token.NewFileSet()
	var fns []fn
	pkgLines := map[string]int{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) && path != d {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			if isIgnored(f) {
				return nil
			}
			pkgLines[filepath.Dir(path)] += fset.File(f.Pos()).LineCount()
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				start := fset.Position(fd.Pos())
				end := fset.Position(fd.End())
				name := fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 {
					name = "(" + recvName(fd.Recv.List[0].Type) + ")." + name
				}
				reason := fd.Doc != nil && strings.Contains(strings.Join(strings.Fields(fd.Doc.Text()), " "), "on purpose")
				fns = append(fns, fn{pos: fmt.Sprintf("%s:%d", path, start.Line), name: name, lines: end.Line - start.Line + 1, reason: reason})
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
	}
	var pkgs []string
	for p := range pkgLines {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgLines[pkgs[i]] > pkgLines[pkgs[j]] })
	fmt.Println("non-test lines by package:")
	for _, p := range pkgs {
		fmt.Printf("%7d  %s\n", pkgLines[p], p)
	}
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	fmt.Println("longest functions:")
	bad := 0
	for i, f := range fns {
		if i < *top {
			note := ""
			if f.reason {
				note = "  (reason written beside it)"
			}
			fmt.Printf("%5d  %s %s%s\n", f.lines, f.pos, f.name, note)
		}
		if *over > 0 && f.lines > *over && !f.reason {
			bad++
		}
	}
	if bad > 0 {
		fmt.Printf("%d functions over %d lines with no reason beside them\n", bad, *over)
		os.Exit(1)
	}
}

func recvName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return "*" + recvName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	}
	return "?"
}

// isIgnored reports whether f is left out of builds (//go:build ignore).
func isIgnored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}
