// Package server owns the gateway's HTTP face: it decodes each request once, authenticates it,
// resolves its route, runs the filter chain and the route's selector, drives the attempt loop
// through the upstream adapters, and writes the answer — a response, a stream, or an
// OpenAI-shaped error — with the x-hayula-chain headers. It holds no package-level state.
package server
