package role

import (
	"context"
	"os"
)

// A role's files, on the role's host: what its programs read (written
// with WriteFile in directories made with MkdirAll) and what it shows
// (ReadFile: /proc/sys/net and /proc/thread-self/net show its namespace).

type fileContent struct {
	Path string
	Data []byte
	Perm uint32
}

var (
	readFileOp = NewOp("role.read-file", func(ctx context.Context, path string) ([]byte, error) {
		if err := CheckRead(ctx, path); err != nil {
			return nil, err
		}
		return os.ReadFile(path)
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
// /proc/thread-self/net show the role's namespace.
func ReadFile(ctx context.Context, r *Role, path string) ([]byte, error) {
	return readFileOp.On(ctx, r, path)
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
