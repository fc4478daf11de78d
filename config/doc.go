// Package config owns the gateway's configuration: it reads the TOML file, checks every key and
// turns it into the typed values the request path uses (core.Target, Route, Key, Cooldown, the
// auto-router's classifier, and Lifecycle for the processes the gateway runs), so that strings
// such as "least-busy" or "30s" never travel past load. It also writes the summary `gateway
// check-config` prints (Summary), and makes API keys and the [[keys]] block that stores their
// hashes (gateway keygen).
//
// Every problem found at load is a *Error naming the file and line; Parse reports all of them at
// once. CONFIG.md at the repository root documents each key.
package config
