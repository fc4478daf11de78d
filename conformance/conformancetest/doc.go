// Package conformancetest owns the reference fake OpenAI-compatible server: an http.Handler that
// follows the OpenAI API closely enough to pass every conformance check, with deliberate faults
// that each break exactly one part of the protocol. The conformance suite's own tests prove
// themselves against it, and other packages' tests use it as a complete upstream.
//
// It is for tests only: no production code imports it, and it imports nothing of this repository
// (the conformance package's own tests import it, so it must not import conformance).
package conformancetest
