//go:build unix

package lifecycle

import "os"

// syncDir syncs a directory, so that a rename in it outlives a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
