package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Error is a config error with its place; Error() is "file:line: message" (line omitted when
// unknown).
type Error struct {
	File string
	Line int // 1-based; 0 when unknown
	Msg  string
	// Err is the underlying error when there is one (reading the file), for errors.Is.
	Err error
}

func (e *Error) Error() string {
	place := e.File
	if e.Line > 0 {
		place += ":" + strconv.Itoa(e.Line)
	}
	if place == "" {
		return e.Msg
	}
	return place + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errors lists the *Error values in err, which Load and Parse may have joined; nil when there are
// none.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		var ce *Error
		switch u := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &ce) {
				out = append(out, ce)
			}
		}
	}
	walk(err)
	return out
}

// problems collects the errors of one load, so that a user fixes a config in one round.
type problems struct {
	file string
	list []*Error
}

func (p *problems) add(line int, format string, args ...any) {
	p.list = append(p.list, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// err joins the problems in line order; those without a line come last.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	order := func(e *Error) int {
		if e.Line == 0 {
			return int(^uint(0) >> 1)
		}
		return e.Line
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int { return cmp.Compare(order(a), order(b)) })
	if len(p.list) == 1 {
		return p.list[0]
	}
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}
