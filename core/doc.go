// Package core owns the leaf types that every stage of the gateway shares: the compiled Target,
// the decoded Request view, the failure Class and the typed upstream errors. It imports nothing of
// ours, so that filter never imports upstream and errmap never imports server.
package core
