package demo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Backends are the simulated services, in the paper's order; the last is the public paid tail.
var backendNames = [...]string{"saif", "averroes-q", "deepseek-r1", "openrouter"}

// DefaultPortBase is where the simulators listen by default: saif on 18441, averroes-q on 18442,
// deepseek-r1 on 18443, openrouter on 18444.
const DefaultPortBase = 18441

// Backends are running simulators.
type Backends struct {
	// URLs maps each backend name to the base URL its target is configured with: with /v1 for
	// the OpenAI-compatible ones, without for saif and averroes-q (Ollama), whose adapters add
	// their own paths.
	URLs    map[string]string
	servers []*http.Server
}

// simulator is the handler of backend name: SAIF's protocol for saif, Ollama's for averroes-q,
// the OpenAI API with R1 reasoning for deepseek-r1, and plain OpenAI for the public tail.
func simulator(name string, chunkDelay time.Duration) http.Handler {
	switch name {
	case "saif":
		return &SAIFSim{ChunkDelay: chunkDelay}
	case "averroes-q":
		return &OllamaSim{Name: name, ChunkDelay: chunkDelay}
	case "deepseek-r1":
		return &OpenAISim{Name: name, Think: true, ChunkDelay: chunkDelay}
	}
	return &OpenAISim{Name: name, ChunkDelay: chunkDelay}
}

func baseURL(name, hostport string) string {
	if name == "saif" || name == "averroes-q" {
		return "http://" + hostport
	}
	return "http://" + hostport + "/v1"
}

// StartBackends starts the simulators on loopback; portBase 0 picks free ports.
func StartBackends(portBase int, chunkDelay time.Duration) (*Backends, error) {
	b := &Backends{URLs: map[string]string{}}
	for i, name := range backendNames {
		addr := "127.0.0.1:0"
		if portBase > 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", portBase+i)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("demo: simulator %s: %w (choose other ports with --sim-port-base)", name, err)
		}
		srv := &http.Server{Handler: simulator(name, chunkDelay), ReadHeaderTimeout: 10 * time.Second}
		b.servers = append(b.servers, srv)
		b.URLs[name] = baseURL(name, ln.Addr().String())
		go func() { _ = srv.Serve(ln) }()
	}
	return b, nil
}

// Close stops the simulators: it lets the requests under way finish for up to two seconds, then
// cuts off the rest (a stream with a long chunk delay), whose handlers would otherwise wait on.
func (b *Backends) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range b.servers {
		if s.Shutdown(ctx) != nil {
			_ = s.Close()
		}
	}
}

// URLsFor returns the URLs the simulators get for a port base, without starting them.
func URLsFor(portBase int) map[string]string {
	m := map[string]string{}
	for i, name := range backendNames {
		m[name] = baseURL(name, fmt.Sprintf("127.0.0.1:%d", portBase+i))
	}
	return m
}

// Config is the demo's gateway configuration for the given backend URLs: the paper's topology.
func Config(listen string, urls map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Hayula Gateway demo: the paper's topology, simulated on loopback; no keys needed.
listen = %q

# SAIF: the security suite, in its own protocol. A route hint (x-route-hint) names one of
# its specialists; without one, SAIF's router picks. Text only.
[targets.saif]
adapter        = "saif"
url            = %q
class          = "private"
context_window = 32768
tools          = false
vision         = false

# Averroes-Q: the Arabic-first generalist, served by Ollama's native API.
[targets.averroes-q]
adapter        = "ollama"
url            = %q
model          = "averroes-q:7b"
class          = "private"
context_window = 32768

# DeepSeek R1 behind an OpenAI-compatible server: its <think> block becomes reasoning_content.
# R1 reads text only: a request with an image skips it.
[targets.deepseek-r1]
adapter        = "openai"
url            = %q
class          = "private"
context_window = 65536
reasoning      = "think-tags"
vision         = false

# The public, paid tail: entered only when every earlier failure was a context overflow.
# The same R1, text only.
[targets.openrouter]
adapter        = "openai"
url            = %q
model          = "deepseek/deepseek-r1"
class          = "public"
context_window = 163840
vision         = false

[routes.saif]
targets = ["saif", "deepseek-r1", "openrouter"]
guard   = { openrouter = ["overflow"] }

[routes.averroes-q]
targets = ["averroes-q", "deepseek-r1"]

[routes.deepseek-r1]
targets = ["deepseek-r1", "openrouter"]
guard   = { openrouter = ["overflow"] }

# /v1/embeddings, through Ollama's /api/embed.
[routes.embed]
targets = ["averroes-q"]

# model "auto": security → saif, reasoning → deepseek-r1, everything else → averroes-q.
[auto]

# Never leaves this machine, even when every private target is down.
[routes.private]
targets = ["saif", "deepseek-r1", "openrouter"]
strict  = true
`, listen, urls["saif"], urls["averroes-q"], urls["deepseek-r1"], urls["openrouter"])
	return b.String()
}
