package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/safedir"
)

// Read loads a results document, refusing a file that is not one: a
// document needs at least a condition, a sample or a transport, and a
// schema this harness knows.
func Read(path string) (*Document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return Parse(b, path)
}

// Parse is Read of a document's bytes; name (the file's path) says in
// errors where they came from.
func Parse(b []byte, name string) (*Document, error) {
	// A sweep's document first: its fields need not parse as a run's.
	if isClients(b) {
		return nil, fmt.Errorf("results %s: %w", name, ErrClients)
	}
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse results %s: %w", name, err)
	}
	if d.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("results %s: schema_version %d is newer than this twnsbench reads (%d)", name, d.SchemaVersion, SchemaVersion)
	}
	if len(d.Conditions) == 0 && len(d.Samples) == 0 && len(d.Transports) == 0 {
		return nil, fmt.Errorf("results %s: not a benchmark results document (no conditions, transports or samples)", name)
	}
	return &d, nil
}

// WriteAtomic writes d to path through a temporary file and a rename, so a
// reader (or an interrupted run) never sees a half-written document.
func WriteAtomic(path string, d *Document) error { return writeJSONAtomic(path, d) }

// WriteSelfCheck writes a self-check document atomically.
func WriteSelfCheck(path string, c *SelfCheck) error { return writeJSONAtomic(path, c) }

func writeJSONAtomic(path string, d any) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := safedir.WriteFileIn("output directory", filepath.Dir(path), filepath.Base(path), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
