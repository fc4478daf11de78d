package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hayula/gateway/metrics"
)

// The soak's keys: most clients share one without caps, some the one whose max_concurrent they
// outnumber, a few the one whose rpm they outrun.
const (
	chaosFree     = "ck-free"
	chaosConc     = "ck-conc"
	chaosRPM      = "ck-rpm"
	chaosMaxConc  = 2
	chaosRPMLimit = 30
)

// shiftClock is the system clock moved on by what the test adds: the rpm key's bucket refills
// when the test says so, while cooldowns and backoff keep their real pace. It is no TimerClock,
// so that the health checker keeps its own (it schedules nothing here: health_interval is 0).
type shiftClock struct{ by atomic.Int64 }

func (c *shiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.by.Load())) }

// headCount is what the clients saw of the OpenAI endpoints: the heads answered, by endpoint and
// status, and the calls that got none (cut, cancelled or hung up before the head), which the
// server counts too, as a 499 most often, but no client can say as what.
type headCount struct {
	mu   sync.Mutex
	n    map[string]int64 // "endpoint code", as hayula_requests_total labels them
	none atomic.Int64

	conc429, rpm429 atomic.Int64 // the key caps' refusals
}

func (h *headCount) add(endpoint string, status int) {
	h.mu.Lock()
	h.n[endpoint+" "+strconv.Itoa(status)]++
	h.mu.Unlock()
}

func (h *headCount) snapshot() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int64, len(h.n))
	for k, v := range h.n {
		out[k] = v
	}
	return out
}

// endpointOf is the endpoint label of an OpenAI endpoint's path, "" for any other path.
func endpointOf(path string) string {
	switch path {
	case "/v1/chat/completions":
		return "chat"
	case "/v1/completions":
		return "completions"
	case "/v1/embeddings":
		return "embeddings"
	}
	return ""
}

// keyedTransport sends every request with token as its key and, with heads set, counts what came back
// from the OpenAI endpoints and checks every 429 for its Retry-After and, when a cap refused
// it, that the cap was the key's.
type keyedTransport struct {
	base  *http.Transport
	token string
	heads *headCount
	fail  func(kind, msg string)
}

func (k *keyedTransport) CloseIdleConnections() { k.base.CloseIdleConnections() }

func (k *keyedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.token)
	resp, err := k.base.RoundTrip(r)
	ep := endpointOf(r.URL.Path)
	if k.heads == nil || ep == "" {
		return resp, err
	}
	if err != nil {
		k.heads.none.Add(1)
		return resp, err
	}
	k.heads.add(ep, resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests {
		k.check429(resp)
	}
	return resp, nil
}

func (k *keyedTransport) check429(resp *http.Response) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rest io.Reader = bytes.NewReader(b)
	if err != nil {
		rest = io.MultiReader(rest, iotest.ErrReader(err))
	}
	resp.Body = io.NopCloser(rest)
	ra := resp.Header.Get("Retry-After")
	secs, aerr := strconv.Atoi(ra)
	if aerr != nil || secs < 1 {
		k.fail("429", fmt.Sprintf("Retry-After %q: %s", ra, b))
	}
	if err != nil {
		return // the client left: the body's shape is rawRequest's or the SDK's to judge
	}
	var e struct {
		Error struct{ Message, Code string }
	}
	_ = json.Unmarshal(b, &e)
	if !strings.HasPrefix(e.Error.Message, "Rate limit reached for key") {
		return // an upstream's 429, passed on
	}
	switch {
	case strings.Contains(e.Error.Message, "concurrent requests"):
		k.heads.conc429.Add(1)
		if k.token != chaosConc || secs != 1 {
			k.fail("429", fmt.Sprintf("max_concurrent refusal for key %s, Retry-After %q: %s", k.token, ra, b))
		}
	case strings.Contains(e.Error.Message, "RPM"):
		k.heads.rpm429.Add(1)
		if k.token != chaosRPM || secs > (60+chaosRPMLimit-1)/chaosRPMLimit {
			k.fail("429", fmt.Sprintf("rpm refusal for key %s, Retry-After %q: %s", k.token, ra, b))
		}
	default:
		k.fail("429", "a cap's refusal that names no cap: "+string(b))
	}
	if e.Error.Code != "rate_limit_exceeded" {
		k.fail("429", "a cap's refusal with code "+e.Error.Code)
	}
}

// scrapeMetrics reads /metrics as Prometheus would, and checks it is a valid exposition.
func scrapeMetrics(hc *http.Client, base string) (map[string]*family, error) {
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != metrics.ContentType {
		return nil, fmt.Errorf("scrape: %d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	fams, err := parseExposition(string(b))
	if err == nil {
		err = checkHistograms(fams)
	}
	return fams, err
}

// scrapeDuring scrapes until stop is closed; every scrape must be valid, and no counter (nor a
// histogram's bucket, sum or count) may go back from one scrape to the next.
func scrapeDuring(base string, stop <-chan struct{}, n *atomic.Int64, fail func(kind, msg string)) {
	hc := &http.Client{Transport: &keyedTransport{base: &http.Transport{}, token: chaosFree}}
	defer hc.CloseIdleConnections()
	last := map[string]float64{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond): // a scraper's interval, shortened
		}
		fams, err := scrapeMetrics(hc, base)
		if err != nil {
			fail("metrics", err.Error())
			continue
		}
		n.Add(1)
		for _, f := range fams {
			if f.typ != "counter" && f.typ != "histogram" {
				continue
			}
			for _, s := range f.samples {
				k := s.name + "{" + labelKey(s.labels, "") + "}"
				if s.value < last[k] {
					fail("metrics", fmt.Sprintf("%s went back from %v to %v", k, last[k], s.value))
				}
				last[k] = s.value
			}
		}
	}
}

// checkMetricsAfter scrapes once the run has settled and checks the counts against what the
// clients saw. A request is counted after its last byte went out, so a client may have its
// answer a moment before the count moves: the check is retried, for up to a minute on a loaded
// machine.
func checkMetricsAfter(t *testing.T, base string, heads *headCount) {
	t.Helper()
	hc := &http.Client{Transport: &keyedTransport{base: &http.Transport{}, token: chaosFree}}
	defer hc.CloseIdleConnections()
	var problems []string
	var summary string
	for end := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		problems, summary = metricsProblems(hc, base, heads)
		if len(problems) == 0 || time.Now().After(end) {
			break
		}
	}
	t.Logf("metrics after the run: %s", summary)
	for _, p := range problems {
		t.Errorf("metrics after the run: %s", p)
	}
}

func metricsProblems(hc *http.Client, base string, heads *headCount) (problems []string, summary string) {
	fams, err := scrapeMetrics(hc, base)
	if err != nil {
		return []string{err.Error()}, ""
	}
	problems = durationCountMismatches(fams)
	fam := func(name string) []sample {
		if f := fams[name]; f != nil && len(f.samples) > 0 {
			return f.samples
		}
		problems = append(problems, "no samples of "+name)
		return nil
	}
	// Every head a client saw was counted with its status; what the server counted beyond
	// them are the calls whose clients saw no head (the 499s among them): no more than those.
	server := map[string]int64{}
	var ok200 int64
	for _, s := range fam("hayula_requests_total") {
		server[s.labels["endpoint"]+" "+s.labels["code"]] += int64(s.value)
		if s.labels["code"] == "200" {
			ok200 += int64(s.value)
		}
	}
	client := heads.snapshot()
	none := heads.none.Load()
	var cells []string
	for k := range server {
		cells = append(cells, k)
	}
	for k := range client {
		if _, ok := server[k]; !ok {
			cells = append(cells, k)
		}
	}
	sort.Strings(cells)
	var surplus int64
	var parts []string
	for _, k := range cells {
		parts = append(parts, fmt.Sprintf("%s: %d/%d", k, server[k], client[k]))
		if server[k] < client[k] {
			problems = append(problems, fmt.Sprintf("requests_total %s is %d, the clients saw %d such answers", k, server[k], client[k]))
		}
		surplus += server[k] - client[k]
	}
	summary = fmt.Sprintf("requests_total/client heads %s; calls without a head %d", strings.Join(parts, ", "), none)
	if surplus > none {
		problems = append(problems, fmt.Sprintf("requests_total counts %d more than the clients' answers, and only %d calls got none", surplus, none))
	}
	for _, s := range fam("hayula_upstream_in_flight") {
		if s.value != 0 {
			problems = append(problems, fmt.Sprintf("hayula_upstream_in_flight %v is %v", s.labels, s.value))
		}
	}
	var served int64
	for _, s := range fam("hayula_served_total") {
		served += int64(s.value)
	}
	if served != ok200 {
		problems = append(problems, fmt.Sprintf("hayula_served_total sums to %d, requests_total has %d answers 200", served, ok200))
	}
	return problems, summary
}

// checkCapsAfter checks, once the run has settled, that no key was left holding what the caps
// count: max_concurrent requests of the capped key get through at once (to the gate, which
// holds them) and one more is refused; a minute later on the test's clock the rpm key has its
// whole rpm again, and no more.
func checkCapsAfter(t *testing.T, base string, clock *shiftClock, arrived <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	post := func(token string) (int, string, []byte, error) {
		hc := &http.Client{Transport: &keyedTransport{base: &http.Transport{}, token: token}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"hold","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), b, err
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	held := make(chan answer, chaosMaxConc)
	for range chaosMaxConc {
		go func() {
			st, _, b, err := post(chaosConc)
			held <- answer{st, b, err}
		}()
	}
	for i := range chaosMaxConc {
		select {
		case <-arrived:
		case a := <-held:
			close(release)
			t.Fatalf("after the run, a request of the max_concurrent key was answered %d %s %v at once: a slot was left taken", a.status, a.body, a.err)
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("after the run, %d of %d requests of the max_concurrent key got through", i, chaosMaxConc)
		}
	}
	if st, ra, b, err := post(chaosConc); st != http.StatusTooManyRequests || ra != "1" || !strings.Contains(string(b), "concurrent requests") {
		t.Errorf("one request over max_concurrent: %d, Retry-After %q, %s %v", st, ra, b, err)
	}
	close(release)
	for range chaosMaxConc {
		if a := <-held; a.status != http.StatusOK {
			t.Errorf("a held request of the max_concurrent key: %d %s %v", a.status, a.body, a.err)
		}
	}

	clock.by.Add(int64(time.Minute))
	began := time.Now()
	for i := range chaosRPMLimit {
		if st, _, b, err := post(chaosRPM); st != http.StatusOK {
			t.Fatalf("a minute after the run, request %d of %d of the rpm key: %d %s %v", i+1, chaosRPMLimit, st, b, err)
		}
	}
	st, ra, b, err := post(chaosRPM)
	// The bucket refills one request every 60/rpm s: a machine that took that long for the
	// burst has one more.
	if time.Since(began) < 60*time.Second/chaosRPMLimit/2 &&
		(st != http.StatusTooManyRequests || ra != strconv.Itoa(60/chaosRPMLimit) || !strings.Contains(string(b), "RPM")) {
		t.Errorf("one request over rpm: %d, Retry-After %q, %s %v", st, ra, b, err)
	}
}
