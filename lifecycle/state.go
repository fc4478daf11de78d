package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const stateVersion = 1

// stateFile is what the state file holds. Only names are kept: a restart pre-warms by recency, and
// timestamps would be meaningless across a reboot.
type stateFile struct {
	Version int `json:"version"`
	// Recent lists managed targets that have been used, most recently used first.
	Recent []string `json:"recent"`
}

// readState returns the saved recency order; a missing file is an empty order.
func readState(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s stateFile
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("lifecycle: state file %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("lifecycle: state file %s: version %d, want %d", path, s.Version, stateVersion)
	}
	return s.Recent, nil
}

// writeState replaces the file through a rename in the same directory, so a crash mid-write
// leaves the old order rather than a torn file.
func writeState(path string, recent []string) error {
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Recent: recent}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
