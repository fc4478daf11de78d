package autoroute

// Rules is the `[auto]` table of the gateway config: how `model: "auto"` picks a route. Every field
// may be left out; a zero value means the default stated on the field.
//
// Example:
//
//	[auto]
//	default = "averroes-q"
//	specialist_route = "saif"
//	specialists = ["rev_eng", "webapp", "malware", "network", "forensics", "crypto", "cloud", "exploit"]
//
//	[[auto.intents]]
//	name = "security"        # terms left out: the built-in security list
//	route = "saif"
//	add_terms = ["siem tuning", "ثغرة يوم الصفر"]
//
//	[[auto.intents]]
//	name = "reasoning"
//	route = "deepseek-r1"
//	terms = ["step by step", "prove", "kernel^1"]
//	min_score = 2
type Rules struct {
	// Intents are tried in this order; the first that fires wins, so the order is the precedence.
	// Empty means the built-in list: security (route "saif"), then reasoning (route "deepseek-r1").
	// When given, it replaces the built-in list as a whole.
	Intents []IntentRule `toml:"intents"`
	// Default is the route of a request that no intent claims (intent "general"). Empty means
	// "averroes-q".
	Default string `toml:"default"`
	// Specialists are x-route-hint values (case-insensitive) that name a SAIF specialist and so send
	// an auto request to SpecialistRoute whatever its text says. Empty means rev_eng, webapp,
	// malware, network, forensics, crypto, cloud, exploit.
	Specialists []string `toml:"specialists"`
	// SpecialistRoute is the route a specialist hint selects. Empty means "saif".
	SpecialistRoute string `toml:"specialist_route"`
	// Negations are cue phrases after which, in the same clause and within the next 6 words, an
	// intent term does not count ("not asking about hacking", "لا أسأل عن"). A cue of one word
	// reaches only the next word ("not step by step", not "not sure if this is malware"). Empty
	// means the built-in English and Arabic list; give ["-"] to switch negation handling off.
	Negations []string `toml:"negations"`
}

// IntentRule is one intent: the words that show it and the route it selects.
//
// A term is a word or a phrase, in any mix of English and Arabic, matched on whole words after
// normalisation (see the package doc): "patch" never matches "dispatch", "sql injection" matches
// "SQL-injection" and "SQL  Injection", "ثغرة" matches "الثغرات" and "بالثغرة". A term may end in
// "^N" (N from 1 to 9) to set its weight; the default weight is 2, so with the default min_score a
// single plain term decides, while two weight-1 terms are needed ("kernel^1" + "patch^1").
// Where one term is a part of a longer one that also matched at the same place ("virus" inside
// "computer virus", "attack" inside the against-term "heart attack"), only the longer one counts.
// Each distinct term counts once however often it appears.
type IntentRule struct {
	// Name is the intent's name as explain shows it ("security"). Required, unique, and not
	// "general" or "hint", which Decision.Intent reserves.
	Name string `toml:"name"`
	// Route is the route this intent selects. Required.
	Route string `toml:"route"`
	// Terms show the intent. Empty for an intent named "security" or "reasoning" means the built-in
	// list for that name; for any other name it is an error unless Any is set.
	Terms []string `toml:"terms"`
	// AddTerms are appended to Terms (or to the built-in list), to extend it without copying it.
	AddTerms []string `toml:"add_terms"`
	// Against are terms that show the intent's words are used in another sense ("biology" for
	// "virus", "popcorn" for "kernel"); each subtracts its weight (default 2, "^N" as in Terms).
	// Empty for a built-in name means the built-in list; give ["-"] for none.
	Against []string `toml:"against"`
	// Pairs are terms that count only together: "safe|secure & wifi|link" adds its weight (default
	// 2, "^N" as in Terms) once when a word or phrase of the left side and one of the right side
	// are both in one clause (between . , ; : ! ? or a line break), in either order, neither
	// negated; alone, or two of one side together, they add nothing. It is for a question that
	// is the intent's only when it is asked about a certain kind of thing ("is public wifi
	// safe?"), where two terms of weight 1 would add up with every other weight-1 term ("wifi
	// password"). A pair found only in the system prompt adds half. "&" and "|" separate, so
	// neither can be in a word of a pair. Empty for a built-in name means the built-in list;
	// give ["-"] for none.
	Pairs []string `toml:"pairs"`
	// Languages limits the intent to prompts in these languages ("english", "arabic", "mixed");
	// empty means all.
	Languages []string `toml:"languages"`
	// MinScore is the score at which the intent fires; 0 means 2, at most MaxMinScore. A term in
	// the last user turn adds its weight, a term found only in the system prompt half of it.
	MinScore int `toml:"min_score"`
	// Any makes the intent fire on every request in its Languages, with no terms needed: the
	// paper's original "Arabic goes to Averroes-Q" is an intent with languages = ["arabic"] and
	// any = true placed first.
	Any bool `toml:"any"`
}

// MaxMinScore is the largest min_score: the score is counted in halves in an int32, where a
// larger one would wrap (2³⁰ became the most negative score, and the intent fired on every
// request). No set of terms of weight 1 to 9 comes near it.
const MaxMinScore = 1_000_000

// Built-in route names.
const (
	RouteSAIF      = "saif"
	RouteDeepSeek  = "deepseek-r1"
	RouteAverroesQ = "averroes-q"
)

// Built-in intent names, and the two that Decision.Intent reserves.
const (
	IntentSecurity  = "security"
	IntentReasoning = "reasoning"
	IntentGeneral   = "general"
	IntentHint      = "hint"
)

// DefaultRules is the configuration used when the [auto] table is absent, spelled out in full so
// that it can be printed, copied and edited.
func DefaultRules() Rules {
	return Rules{
		Intents: []IntentRule{
			{Name: IntentSecurity, Route: RouteSAIF, Terms: securityTerms(), Against: securityAgainst(), Pairs: securityPairs(), MinScore: 2},
			{Name: IntentReasoning, Route: RouteDeepSeek, Terms: reasoningTerms(), Against: reasoningAgainst(), MinScore: 2},
		},
		Default:         RouteAverroesQ,
		Specialists:     defaultSpecialists(),
		SpecialistRoute: RouteSAIF,
		Negations:       defaultNegations(),
	}
}

func defaultSpecialists() []string {
	return []string{"rev_eng", "webapp", "malware", "network", "forensics", "crypto", "cloud", "exploit"}
}

func builtinTerms(name string) (terms, against, pairs []string, ok bool) {
	switch name {
	case IntentSecurity:
		return securityTerms(), securityAgainst(), securityPairs(), true
	case IntentReasoning:
		return reasoningTerms(), reasoningAgainst(), nil, true
	}
	return nil, nil, nil, false
}
