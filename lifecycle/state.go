package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// writeState replaces the file durably and atomically: the order is written to a temporary copy
// in the same directory, which is synced and renamed over the file, and the directory is synced
// so that the rename outlives a power loss. A crash leaves the old order or the new one, never a
// torn file; a crash before the rename leaves the copy, which removeStaleTemps clears at the next
// Start.
func writeState(path string, recent []string) error {
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Recent: recent}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), stateTempPattern(path))
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
		return err
	}
	return syncDir(filepath.Dir(path))
}

// removeStaleTemps removes the temporary copies of path that an earlier run's crash between
// writing one and renaming it left behind (TestStaleStateTempRemoved). The file itself is never
// read from them: it holds the order the last complete write left.
func removeStaleTemps(path string) error {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(stateTempPattern(path), "*")
	var errs []error
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// stateTempPattern is os.CreateTemp's pattern for path's temporary copies: hidden, in its
// directory, named after it.
func stateTempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }
