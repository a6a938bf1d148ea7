package role

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// A role's files, on the role's host: what its programs read (written
// with WriteFile in directories made with MkdirAll) and what it shows
// (ReadFile: /proc/sys/net and /proc/thread-self/net show its namespace).

type fileContent struct {
	Path string
	Data []byte
	Perm uint32
}

// fileRead is a read's answer. A file that does not exist crosses as
// Missing, not as an error: an op's error crosses a wire as text, and a
// caller telling "absent here" (a sysctl an older kernel shows only in
// the initial namespace) from a failure would lose os.ErrNotExist.
type fileRead struct {
	Data    []byte
	Missing bool
}

var (
	readFileOp = NewOp("role.read-file", func(ctx context.Context, path string) (fileRead, error) {
		if err := CheckRead(ctx, path); err != nil {
			return fileRead{}, err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fileRead{Missing: true}, nil
		}
		return fileRead{Data: b}, err
	})
	writeFileOp = NewOp("role.write-file", func(ctx context.Context, f fileContent) (Nothing, error) {
		if err := CheckPath(ctx, f.Path); err != nil {
			return Nothing{}, err
		}
		return Nothing{}, os.WriteFile(f.Path, f.Data, os.FileMode(f.Perm))
	})
	mkdirOp = NewOp("role.mkdir", func(ctx context.Context, f fileContent) (Nothing, error) {
		if err := CheckPath(ctx, f.Path); err != nil {
			return Nothing{}, err
		}
		return Nothing{}, os.MkdirAll(f.Path, os.FileMode(f.Perm))
	})
)

// ReadFile reads a file as role r sees it: /proc/sys/net and
// /proc/thread-self/net show the role's namespace. A file missing there is
// an error that is os.ErrNotExist, on this host or across a wire.
func ReadFile(ctx context.Context, r *Role, path string) ([]byte, error) {
	f, err := readFileOp.On(ctx, r, path)
	if err != nil {
		return nil, err
	}
	if f.Missing {
		return nil, fmt.Errorf("%s: %w", r.Name(), &fs.PathError{Op: "open", Path: path, Err: syscall.ENOENT})
	}
	return f.Data, nil
}

// WriteFile writes a file role r's processes read (a configuration), on
// the role's host.
func WriteFile(ctx context.Context, r *Role, path string, data []byte, perm os.FileMode) error {
	_, err := writeFileOp.On(ctx, r, fileContent{Path: path, Data: data, Perm: uint32(perm)})
	return err
}

// MkdirAll makes a directory and its parents on role r's host.
func MkdirAll(ctx context.Context, r *Role, path string, perm os.FileMode) error {
	_, err := mkdirOp.On(ctx, r, fileContent{Path: path, Perm: uint32(perm)})
	return err
}
