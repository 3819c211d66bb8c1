package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// SetFile is one file of a set WriteSet writes: its name in the folder
// and what writes it.
type SetFile struct {
	Name  string
	Write func(io.Writer) error
}

// WriteSet writes files into the folder dir as one set (export --format
// parquet's tables): they are written into a temporary folder beside dir
// and moved into place only once every one is whole, a new folder by
// renaming the temporary one, an existing one file by file (other files
// in it are left alone), after checking that each file's place can take
// a regular file. A set that fails or is stopped partway (a signal:
// Outputs.RemoveAll) leaves dir as it was, never files of two runs, and
// no temporary folder. A link to a file of the set is written through,
// as Write does; an existing file keeps its mode, a new one gets 0666
// less the umask. The errors name the path.
func WriteSet(ctx context.Context, dir string, files []SetFile) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("writing %s: not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	exists := err == nil
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	pattern := "." + base + ".*.tmp"
	if len(pattern) > 200 {
		pattern = ".snapview-*.tmp"
	}
	stage, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	outs := outputsOf(ctx)
	outs.add(stage)
	defer func() {
		os.RemoveAll(stage) // gone already when renamed into place
		outs.done(stage)
	}()
	for _, f := range files {
		if err := writeStaged(filepath.Join(stage, f.Name), f.Write); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, f.Name), err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !exists {
		if err := os.Chmod(stage, fs.FileMode(0o777)&^umask()); err != nil {
			return fmt.Errorf("writing %s: %w", dir, err)
		}
		if err := outs.rename(stage, dir); err != nil {
			return fmt.Errorf("writing %s: %w", dir, err)
		}
		return nil
	}
	// Every file's place is checked before the first is moved, so that
	// one that cannot be replaced (a folder of that name) fails the set
	// with the folder untouched.
	dsts := make([]string, len(files))
	for i, f := range files {
		dst := filepath.Join(dir, f.Name)
		if target, err := filepath.EvalSymlinks(dst); err == nil {
			dst = target
		}
		old, err := os.Stat(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("writing %s: %w", dst, err)
		case !old.Mode().IsRegular():
			return fmt.Errorf("writing %s: not a regular file", dst)
		default:
			os.Chmod(filepath.Join(stage, f.Name), old.Mode().Perm()) // keep an existing file's mode
		}
		dsts[i] = dst
	}
	for i, f := range files {
		if err := outs.rename(filepath.Join(stage, f.Name), dsts[i]); err != nil {
			return fmt.Errorf("writing %s: %w", dsts[i], err)
		}
	}
	return nil
}

// writeStaged writes a file of a set into its temporary folder.
func writeStaged(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
