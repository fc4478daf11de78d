// Package archtest owns the import rules of the repository: which of our packages may depend on
// which, and that README names each. It has no code; its test walks `go list -deps` and fails when a
// forbidden import appears, or a package README does not name.
package archtest
