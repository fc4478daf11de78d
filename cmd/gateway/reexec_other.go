//go:build !unix

package main

import "errors"

func reexec([]string) error {
	return errors.New("re-executing is not supported on this system")
}
