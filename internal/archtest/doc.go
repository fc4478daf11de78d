// Package archtest owns the import rules of the repository: which of our packages may depend on
// which. It has no code; its test walks `go list -deps` and fails when a forbidden import appears.
package archtest
