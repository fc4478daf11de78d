// Package server owns the gateway's HTTP face: it decodes each request once, authenticates it,
// resolves its route, runs the filter chain and the route's selector, drives the attempt loop
// through the upstream adapters, and writes the answer — a response, a stream, or an
// OpenAI-shaped error — with the x-hayula-chain headers. Beside the requests it runs, between
// Start and Close, the active health checks (health.go) and the processes of targets with a
// command (lifecycle.go), sending each attempt on such a target to its running process. It holds
// no package-level state.
package server
