//go:build ignore

// pkgrows draws the package rows of docs/design.md from the code: each
// package of the module on the row after its highest import, with the
// imports no other of its imports already implies (the transitive
// reduction of `go list`'s graph). cmd/snapview's internal test packages
// are left out.
//
//	go run scripts/pkgrows.go        # print the rows
//	go run scripts/pkgrows.go -w     # rewrite them in docs/design.md
//
// With -w the block from the line "row 0" to the closing ``` is replaced;
// after merging branches that each moved code, run it again rather than
// merging the rows by hand.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "github.com/snapview/snapview/"

func main() {
	write := flag.Bool("w", false, "rewrite the rows in docs/design.md")
	flag.Parse()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkgrows: go list:", err)
		os.Exit(1)
	}
	g := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		p := strings.TrimPrefix(f[0], module)
		g[p] = []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				g[p] = append(g[p], strings.TrimPrefix(imp, module))
			}
		}
	}
	rows := draw(g)
	if !*write {
		fmt.Print(rows)
		return
	}
	const doc = "docs/design.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkgrows:", err)
		os.Exit(1)
	}
	start := bytes.Index(b, []byte("\nrow 0"))
	end := -1
	if start >= 0 {
		end = bytes.Index(b[start:], []byte("\n```"))
	}
	if start < 0 || end < 0 {
		fmt.Fprintln(os.Stderr, "pkgrows: docs/design.md has no block of rows from \"row 0\" to ```")
		os.Exit(1)
	}
	nb := append(append(append([]byte{}, b[:start+1]...), rows...), b[start+end+1:]...)
	if err := os.WriteFile(doc, nb, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "pkgrows:", err)
		os.Exit(1)
	}
}

// draw returns the rows of g, a package's imports within the module.
func draw(g map[string][]string) string {
	depth := map[string]int{}
	var d func(p string) int
	d = func(p string) int {
		if v, ok := depth[p]; ok {
			return v
		}
		v := 0
		for _, q := range g[p] {
			v = max(v, d(q)+1)
		}
		depth[p] = v
		return v
	}
	reach := map[string]map[string]bool{}
	var r func(p string) map[string]bool
	r = func(p string) map[string]bool {
		if m, ok := reach[p]; ok {
			return m
		}
		m := map[string]bool{}
		for _, q := range g[p] {
			m[q] = true
			for k := range r(q) {
				m[k] = true
			}
		}
		reach[p] = m
		return m
	}
	byRow := map[int][]string{}
	top := 0
	for p := range g {
		if strings.HasPrefix(p, "cmd/snapview/internal") || strings.HasPrefix(p, "scripts") {
			continue
		}
		byRow[d(p)] = append(byRow[d(p)], p)
		top = max(top, d(p))
	}
	var b strings.Builder
	for row := 0; row <= top; row++ {
		slices.Sort(byRow[row])
		for i, p := range byRow[row] {
			var red []string
			for _, q := range g[p] {
				implied := false
				for _, o := range g[p] {
					if o != q && r(o)[q] {
						implied = true
					}
				}
				if !implied {
					red = append(red, q)
				}
			}
			slices.Sort(red)
			head := strings.Repeat(" ", 8)
			if i == 0 {
				head = fmt.Sprintf("row %-3d ", row)
			}
			if len(red) == 0 {
				b.WriteString(head + p + "\n")
				continue
			}
			pre := head + fmt.Sprintf("%-26s -> ", p)
			line := pre
			for j, q := range red {
				piece := q
				if j < len(red)-1 {
					piece += ", "
				}
				if len(line)+len(piece) > 104 && line != pre {
					b.WriteString(strings.TrimRight(line, " ") + "\n")
					line = strings.Repeat(" ", len(pre))
				}
				line += piece
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	return b.String()
}
