package conformance

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden report files in testdata/")

// sampleReport holds one of each result so every rendering branch shows.
func sampleReport() *Report {
	return &Report{
		BaseURL: "http://127.0.0.1:8080/v1", Model: "tiny|model", EmbeddingModel: "tiny-embed",
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond,
		Checks: []CheckResult{
			{ID: "models.list.status", Grade: Must, Title: "GET /v1/models answers 200 with a JSON body", Result: Pass},
			{ID: "chat.stream.done", Grade: Must, Title: "the stream ends with data: [DONE] and nothing after it", Result: Fail,
				Reason: `no [DONE]; last event: "{}"`,
				Evidence: &Evidence{Expected: "data: [DONE] as the last event", Seen: `no [DONE]; last event: "{}"`,
					Excerpt: "> POST /v1/chat/completions\n< HTTP 200 Content-Type: text/event-stream\n< data: {}"}},
			{ID: "chat.n.choices", Grade: Should, Title: "n 2 yields two choices with indexes 0 and 1", Result: Warn,
				Reason: "choices: [1 item]", Evidence: &Evidence{Expected: "two choices", Seen: "choices: [1 item]"}},
			{ID: "embeddings.status", Grade: Must, Title: "POST /v1/embeddings answers 200 with a JSON body", Result: Skip,
				Reason: "server answered HTTP 404"},
		},
	}
}

func TestReportFormatsGolden(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatJSON, FormatJUnit, FormatMarkdown} {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := sampleReport().Write(&b, f); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "report."+string(f)+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s report differs from %s (-want +got):\n%s", f, golden, diff)
			}
		})
	}
}

func TestJUnitCounts(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().Write(&b, FormatJUnit); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	got := []int{doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites[0].Cases)}
	if diff := cmp.Diff([]int{4, 1, 1, 4}, got); diff != "" {
		t.Errorf("tests, failures, skipped, cases (-want +got):\n%s", diff)
	}
}

func TestParseFormat(t *testing.T) {
	for _, tt := range []struct {
		in     string
		wantOK bool
	}{{"table", true}, {"json", true}, {"junit", true}, {"markdown", true}, {"md", false}, {"", false}} {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseFormat(tt.in)
			if (err == nil) != tt.wantOK {
				t.Errorf("ParseFormat(%q) err = %v, want ok %v", tt.in, err, tt.wantOK)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	r := sampleReport()
	if r.ExitCode() != 1 {
		t.Errorf("a FAIL must exit 1")
	}
	r.Checks[1].Result = Skip
	if r.ExitCode() != 0 {
		t.Errorf("WARN and SKIP alone must exit 0")
	}
}
