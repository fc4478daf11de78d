package config

import (
	"strings"
	"testing"
)

// parseErr loads src and returns its error's text, "" when it loads.
func parseErr(t *testing.T, src string) string {
	t.Helper()
	_, err := Parse([]byte(src), "r.toml", func(string) string { return "" })
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAutoMinScoreBounded: min_score is doubled into an int32 (a system-prompt term counts half),
// so 1073741824 wrapped to the most negative int32 and the intent fired on every request, the
// opposite of what a high bar asks for. Load refuses a min_score above the documented most.
func TestAutoMinScoreBounded(t *testing.T) {
	auto := func(n string) string {
		return "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n" +
			"[routes.r]\ntargets = [\"a\"]\n[routes.s]\ntargets = [\"a\"]\n" +
			"[auto]\ndefault = \"r\"\nspecialist_route = \"r\"\n[[auto.intents]]\nname = \"rare\"\nroute = \"s\"\nterms = [\"zebra\"]\nmin_score = " + n + "\n"
	}
	if msg := parseErr(t, auto("1000000")); msg != "" {
		t.Fatalf("min_score = 1000000 (the documented most) does not load: %s", msg)
	}
	for _, n := range []string{"1000001", "1073741824", "2147483648"} {
		msg := parseErr(t, auto(n))
		if !strings.Contains(msg, "r.toml:15: auto: intents[0].min_score: must be from 0 to 1000000, got "+n) {
			t.Errorf("min_score = %s: got %q", n, msg)
		}
	}
}

// TestSummaryScrapeOnlyKey: a key with routes = [] may use no route; the summary said
// "prometheus: routes", a list cut off, rather than what the key may do.
func TestSummaryScrapeOnlyKey(t *testing.T) {
	cfg, err := Parse([]byte(minimal+"[[keys]]\nname = \"prometheus\"\nsha256 = \""+hashTest+"\"\nroutes = []\n"), "k.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Summary(), "\n  prometheus: no route (GET /metrics only)\n"; !strings.Contains(got, want) {
		t.Errorf("Summary does not say %q:\n%s", want, got)
	}
}

// TestSpecialistsTwiceInAnotherCase: a hint is matched to a saif target's specialists without
// case, the first match winning, so of "Web" and "web" the second could never be named; load
// took them as two.
func TestSpecialistsTwiceInAnotherCase(t *testing.T) {
	msg := parseErr(t, "[targets.s]\nadapter = \"saif\"\nurl = \"http://127.0.0.1:1\"\nspecialists = [\"Web\", \"malware\", \"web\"]\n"+
		"[routes.r]\ntargets = [\"s\"]\n")
	if want := `r.toml:4: targets.s.specialists[2]: "web" is listed twice (as "Web"; a hint names a specialist in any case)`; !strings.Contains(msg, want) {
		t.Errorf("got %q, want %q", msg, want)
	}
}

// TestBadURLCredentialsNotRepeated: a url or health_path with user:password@ that is no http(s)
// URL was quoted whole in its error, password included, where a parseable one is refused without
// being repeated. The message now quotes it without the credentials, as without its query.
func TestBadURLCredentialsNotRepeated(t *testing.T) {
	for _, u := range []string{
		"https://u:s3cr%zzET@api.example.com/v1", // a bad escape: url.Parse fails
		"ftp://u:s3crET@api.example.com/v1",
		"https://u:s3cr et@api.example.com/v1",
		"u:s3crET@api.example.com/v1",
		"https://u:s3cr@ET@api.example.com/v1?key=s3crET",
		"https://u:s3/cr@api.example.com/v1", // a slash in the password
		// A '?' or '#' in the password: quoted up to it, the password's start went with the URL.
		"https://u:s3cr?ET@api.example.com/v1",
		"https://u:s3cr#ET@api.example.com/v1",
		"ftp://u:s3cr?ET@api.example.com/v1",
	} {
		for _, key := range []string{"url", "health_path"} {
			src := "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n" + key + " = \"" + u + "\"\n" +
				"[routes.r]\ntargets = [\"a\"]\n"
			if key == "url" {
				src = "[targets.a]\nadapter = \"openai\"\nurl = \"" + u + "\"\n[routes.r]\ntargets = [\"a\"]\n"
			}
			msg := parseErr(t, src)
			if msg == "" || strings.Contains(msg, "s3cr") {
				t.Errorf("%s = %q: the error repeats the password, or is none: %q", key, u, msg)
			}
		}
	}
}

// TestAutoEmptyValuesRefused: [auto] keys whose empty value the classifier takes for "left out":
// intents = [] is "given at all", which CONFIG.md says replaces the built-in list, yet it loaded
// the built-in security and reasoning intents; default = "" and specialist_route = "" loaded
// the built-in routes. Each is refused with what to write instead, as a target's model = "" is.
func TestAutoEmptyValuesRefused(t *testing.T) {
	const base = minimal + "[routes.saif]\ntargets = [\"a\"]\n[routes.deepseek-r1]\ntargets = [\"a\"]\n[routes.averroes-q]\ntargets = [\"a\"]\n[auto]\n"
	for _, tc := range []struct{ key, want string }{
		{"intents = []", "r.toml:14: auto.intents: empty"},
		{"default = \"\"", "r.toml:14: auto.default: empty"},
		{"specialist_route = \"\"", "r.toml:14: auto.specialist_route: empty"},
	} {
		if msg := parseErr(t, base+tc.key+"\n"); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.key, msg, tc.want)
		}
	}
}

// TestSummaryKeyNameOnOneLine: a key's name may hold a line feed (server's TestMetricsExpfmt
// uses one), and check-config's summary printed it as written, so name = "k\n  admin: every
// route" made a line of its own there, listing a key that does not exist. A name with a control
// character is shown quoted, as Go quotes it; a plain one as it is.
func TestSummaryKeyNameOnOneLine(t *testing.T) {
	cfg, err := Parse([]byte(minimal+"[[keys]]\nname = \"k\\n  admin: every route\"\nsha256 = \""+hashTest+"\"\nroutes = [\"r\"]\n"+
		"[[keys]]\nname = \"Alice's laptop\"\nsha256 = \""+strings.Repeat("a", 64)+"\"\n"), "k.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Summary()
	for _, want := range []string{"\n  \"k\\n  admin: every route\": routes r\n", "\n  Alice's laptop: every route\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("Summary does not hold %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\n  admin: every route") {
		t.Errorf("a key's name made a line of its own:\n%s", got)
	}
}

// TestEmptyValuesSaidNotDefaulted: values written empty that loaded as if left out, where the
// config refuses model = "" and state_file = "": policy = "" was ordered, api_key_env = "" sent
// no key, and [auto] negations = [] was the built-in list (["-"] is none). Each is refused.
func TestEmptyValuesSaidNotDefaulted(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{minimal + "policy = \"\"\n", `r.toml:7: routes.r.policy: unknown policy ""`},
		{"[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\napi_key_env = \"\"\n[routes.r]\ntargets = [\"a\"]\n",
			"r.toml:4: targets.a.api_key_env: empty; leave it out for a target that takes no key"},
	} {
		if msg := parseErr(t, tc.src); !strings.Contains(msg, tc.want) {
			t.Errorf("got %q, want %q", msg, tc.want)
		}
	}
	msg := parseErr(t, minimal+"[auto]\ndefault = \"r\"\nspecialist_route = \"r\"\nnegations = []\n"+
		"[[auto.intents]]\nname = \"x\"\nroute = \"r\"\nterms = [\"a\"]\n")
	if want := `r.toml:10: auto.negations: empty; leave it out for the built-in cues, or write ["-"] for none`; !strings.Contains(msg, want) {
		t.Errorf("negations = []: got %q, want %q", msg, want)
	}
	// [auto] specialists = [] was the built-in list of eight.
	msg = parseErr(t, minimal+"[auto]\ndefault = \"r\"\nspecialist_route = \"r\"\nspecialists = []\n"+
		"[[auto.intents]]\nname = \"x\"\nroute = \"r\"\nterms = [\"a\"]\n")
	if want := `r.toml:10: auto.specialists: empty; leave it out for the built-in list (rev_eng, webapp, malware, network, forensics, crypto, cloud, exploit)`; !strings.Contains(msg, want) {
		t.Errorf("specialists = []: got %q, want %q", msg, want)
	}
}

// TestTableTypeMismatchInTOMLWords: a value where a table belongs was reported in the library's
// Go words ("type mismatch for config.cooldownTOML: expected table but found int64"), which a
// config's author never saw; other type errors are said in TOML's words, as here.
func TestTableTypeMismatchInTOMLWords(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"cooldown = 5\n" + minimal, "r.toml:1: cooldown: want a table, got an integer"},
		{"auto = \"on\"\n" + minimal, "r.toml:1: auto: want a table, got a string"},
		{"targets.b = 5\n" + minimal, "r.toml:1: targets.b: want a table, got an integer"},
		{minimal + "[groups]\ng = true\n", "r.toml:8: groups.g: want a table, got a boolean"},
		{minimal + "[auto]\nintents = [5]\n", "r.toml:8: auto.intents: want a table, got an integer"},
	} {
		msg := parseErr(t, tc.src)
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "TOML") || strings.Contains(msg, "config.") {
			t.Errorf("got %q, want %q", msg, tc.want)
		}
	}
}

// TestAutoSpecialistTheSAIFTargetLacksWarned: an [auto] specialist hint sends model auto to
// specialist_route whatever the text, and a saif target there that lists no such specialist
// answers it 400 unknown_specialist, which ends the chain: with the target's list narrowed and
// [auto]'s left at its default (every built-in specialist), model auto answered such hints 400
// without a word at load. check-config now warns, naming the specialists and the target.
func TestAutoSpecialistTheSAIFTargetLacksWarned(t *testing.T) {
	const routes = "[routes.saif]\ntargets = [\"s\", \"a\"]\n[routes.gen]\ntargets = [\"a\"]\n"
	const targets = "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\n" +
		"[targets.s]\nadapter = \"saif\"\nurl = \"http://127.0.0.1:8/v1\"\n"
	for _, tc := range []struct {
		name, specialists, auto, want string
	}{
		{"narrowed target, default [auto]", "specialists = [\"webapp\", \"Malware\"]\n", "",
			`[auto]: x-route-hint rev_eng, network, forensics, crypto, cloud or exploit sends model auto to route saif, where no saif target (s) has such a specialist`},
		{"both narrowed alike", "specialists = [\"webapp\"]\n", "specialists = [\"WebApp\"]\n", ""},
		{"both defaults", "", "", ""},
		// A second saif target on the route that lists the rest serves them: the first is only
		// passed over for them (filter specialist), and no hint is refused.
		{"a second target lists the rest", "specialists = [\"webapp\", \"Malware\"]\n" +
			"[targets.s2]\nadapter = \"saif\"\nurl = \"http://127.0.0.1:7/v1\"\n" +
			"specialists = [\"rev_eng\", \"network\", \"forensics\", \"crypto\", \"cloud\", \"exploit\"]\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := routes
			if strings.Contains(tc.specialists, "s2") {
				rs = strings.Replace(rs, `["s", "a"]`, `["s", "s2", "a"]`, 1)
			}
			src := targets + tc.specialists + rs + "[auto]\ndefault = \"gen\"\n" + tc.auto +
				"[[auto.intents]]\nname = \"x\"\nroute = \"gen\"\nterms = [\"x\"]\n"
			cfg, err := Parse([]byte(src), "w.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings() {
				if strings.Contains(w, "has such a specialist") {
					got = append(got, w)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warned %q", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("warnings %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestGuardThatCanNeverOpenRefused: a guarded target is entered only after failures all of its
// guard's classes, and only a failure in fallback_on moves the chain on (a target passed over
// for its context window counts as an overflow, whatever fallback_on says). A guard none of whose
// classes is in fallback_on, overflow aside, never lets its target be tried; it loaded, where an
// empty guard, which means the same, is refused.
func TestGuardThatCanNeverOpenRefused(t *testing.T) {
	const targets = "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n" +
		"[targets.b]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:2/v1\"\n"
	for _, tc := range []struct{ route, want string }{
		{"fallback_on = [\"connection\"]\nguard = { b = [\"timeout\", \"server_error\"] }\n",
			`r.toml:10: routes.r.guard.b: none of its classes (timeout server_error) moves this route on (fallback_on: connection), so it would never let "b" be tried`},
		{"fallback_on = []\nguard = { b = [\"timeout\"] }\n",
			`r.toml:10: routes.r.guard.b: none of its classes (timeout) moves this route on (fallback_on: none), so it would never let "b" be tried`},
		{"fallback_on = [\"connection\"]\nguard = { b = [\"overflow\"] }\n", ""}, // a context-window skip opens it
		{"fallback_on = [\"connection\"]\nguard = { b = [\"connection\", \"timeout\"] }\n", ""},
		{"guard = { b = [\"timeout\"] }\n", ""},
	} {
		msg := parseErr(t, targets+"[routes.r]\ntargets = [\"a\", \"b\"]\n"+tc.route)
		if tc.want == "" && msg != "" || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: got %q, want %q", strings.ReplaceAll(tc.route, "\n", "; "), msg, tc.want)
		}
	}
}
