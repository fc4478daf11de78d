// Package conformance owns the OpenAI-compatibility conformance suite: the
// catalogue of graded checks, the probes (HTTP exchanges) that feed them, the
// judging of each exchange, and the reports (table, json, junit, markdown).
//
// It judges shape and protocol, never wording, because the servers it points
// at often run tiny random models that answer nonsense. It imports nothing of
// this repository, so it can check any server, the gateway included; the
// `gateway conformance` command is a thin wrapper around [Main].
package conformance
