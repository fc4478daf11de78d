package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Specialists are the simulated SAIF suite's specialists, each with the words its router looks
// for (English and Arabic, lower-case, matched as substrings).
var specialistWords = []struct {
	name  string
	words []string
}{
	{"rev_eng", []string{"reverse engineer", "disassembl", "decompil", "ghidra", "binary", "upx", "unpack", "الهندسة العكسية"}},
	{"webapp", []string{"xss", "sql injection", "sqli", "csrf", "web app", "owasp", "تطبيقات الويب", "الويب"}},
	{"malware", []string{"malware", "ransomware", "trojan", "dropper", "virus", "البرمجيات الخبيثة", "برمجيات خبيثة"}},
	{"network", []string{"nmap", "port scan", "firewall", "tcp", "dns", "network", "الشبكة", "الشبكات"}},
	{"forensics", []string{"forensic", "memory dump", "volatility", "incident response", "الأدلة الجنائية"}},
	{"crypto", []string{"crypto", "md5", "sha-", "aes", "rsa", "encrypt", "password hash", "التشفير"}},
	{"cloud", []string{"aws", "azure", "s3 bucket", "kubernetes", "iam", "cloud", "السحابة"}},
	{"exploit", []string{"exploit", "cve", "overflow", "rce", "privilege escalation", "ثغرة", "استغلال"}},
}

// defaultSpecialist is what the simulated router picks when no word matched.
const defaultSpecialist = "exploit"

// SAIFSim is the simulated SAIF suite, speaking the SAIF protocol (CONFIG.md): a router that
// picks a specialist by keywords when the request names none, a hint that is always honoured,
// and a 503 "loading" with Retry-After on "[loading:saif]", or on every LoadingEvery-th
// completion when that is set, as while a specialist is swapped in. Of the sampler it honours
// what the protocol carries: stop and max_tokens (temperature changes nothing in a simulation).
type SAIFSim struct {
	// ChunkDelay spaces streamed events; 0 sends them at once.
	ChunkDelay time.Duration
	// LoadingEvery makes every n-th completion answer 503 loading; 0 means only on the trigger.
	LoadingEvery int
	// RetryAfter is the Retry-After of a loading answer, in seconds; 0 means 2.
	RetryAfter int

	seq atomic.Int64
}

type saifSimRequest struct {
	Prompt     string   `json:"prompt"`
	Specialist *string  `json:"specialist"`
	MaxTokens  int      `json:"max_tokens"`
	Stop       []string `json:"stop"`
	Stream     bool     `json:"stream"`
}

// ServeHTTP serves POST /v1/completions and GET /v1/health.
func (s *SAIFSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/health" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		names := make([]string, len(specialistWords))
		for i, sp := range specialistWords {
			names[i] = sp.name
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "loaded": names})
	case r.URL.Path == "/v1/completions" && r.Method == http.MethodPost:
		s.complete(w, r)
	default:
		simError(w, http.StatusNotFound, "not_found_error", "unknown_url", "no such endpoint on the saif simulator")
	}
}

func (s *SAIFSim) complete(w http.ResponseWriter, r *http.Request) {
	var req saifSimRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", err.Error())
		return
	}
	n := s.seq.Add(1)
	question := lastChatMLUser(req.Prompt)
	switch {
	case strings.Contains(question, "[loading:saif]") || (s.LoadingEvery > 0 && n%int64(s.LoadingEvery) == 0):
		after := s.RetryAfter
		if after <= 0 {
			after = 2
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strconv.Itoa(after))
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "loading"})
		return
	case strings.Contains(question, "[fail:saif]"):
		simError(w, http.StatusServiceUnavailable, "server_error", "simulated_failure", "saif simulator: simulated outage")
		return
	case strings.Contains(question, "[overflow:saif]"):
		simError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 32768 tokens. However, you requested more (simulated).")
		return
	}
	specialist, routedBy, confidence := "", "hint", 1.0
	if req.Specialist != nil {
		specialist = *req.Specialist
		if !knownSpecialist(specialist) {
			simError(w, http.StatusBadRequest, "invalid_request_error", "unknown_specialist",
				fmt.Sprintf("unknown specialist %q", specialist))
			return
		}
	} else {
		specialist, confidence = Route(question)
		routedBy = "router"
	}
	gen := generate(Reply("saif/"+specialist, question), req.Stop, req.MaxTokens)
	prompt, completion := len(strings.Fields(req.Prompt)), len(gen.tokens)
	// Written in the order CONFIG.md gives SAIF's members, as the service writes them (a map
	// comes out sorted), so that the saif adapter reads the demo's events as it reads SAIF's.
	usage := saifUsage{Prompt: prompt, Completion: completion}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(saifAnswer{ID: fmt.Sprintf("saif-%d", n), Specialist: specialist,
			RoutedBy: routedBy, Confidence: confidence, Text: gen.text(), FinishReason: gen.finish, Usage: usage})
		return
	}
	sse := newSSE(w)
	for _, p := range gen.tokens {
		if !pause(r, s.ChunkDelay) {
			return
		}
		sse.send(saifText{Text: p, Specialist: specialist})
	}
	sse.send(saifDone{Done: true, FinishReason: gen.finish, Usage: usage})
}

// saifAnswer, saifText, saifDone and saifUsage are SAIF's answer, text event, done event and
// usage, their members in CONFIG.md's order.
type (
	saifAnswer struct {
		ID           string    `json:"id"`
		Specialist   string    `json:"specialist"`
		RoutedBy     string    `json:"routed_by"`
		Confidence   float64   `json:"confidence"`
		Text         string    `json:"text"`
		FinishReason string    `json:"finish_reason"`
		Usage        saifUsage `json:"usage"`
	}
	saifText struct {
		Text       string `json:"text"`
		Specialist string `json:"specialist"`
	}
	saifDone struct {
		Done         bool      `json:"done"`
		FinishReason string    `json:"finish_reason"`
		Usage        saifUsage `json:"usage"`
	}
	saifUsage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	}
)

// Route is the simulated SAIF router: the specialist whose words match most often, and a
// confidence that grows with the matches.
func Route(question string) (specialist string, confidence float64) {
	q := strings.ToLower(question)
	best, hits := defaultSpecialist, 0
	for _, sp := range specialistWords {
		n := 0
		for _, w := range sp.words {
			n += strings.Count(q, w)
		}
		if n > hits {
			best, hits = sp.name, n
		}
	}
	if hits == 0 {
		return best, 0.35
	}
	return best, min(0.95, 0.6+0.1*float64(hits))
}

func knownSpecialist(name string) bool {
	for _, sp := range specialistWords {
		if sp.name == name {
			return true
		}
	}
	return false
}

// lastChatMLUser is the last user turn of a ChatML prompt, or the whole prompt when it is not
// ChatML (a /v1/completions prompt).
func lastChatMLUser(prompt string) string {
	const open = "<|im_start|>user\n"
	i := strings.LastIndex(prompt, open)
	if i < 0 {
		return prompt
	}
	turn := prompt[i+len(open):]
	if j := strings.Index(turn, "<|im_end|>"); j >= 0 {
		turn = turn[:j]
	}
	return turn
}
