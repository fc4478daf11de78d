// Package autoroute owns the `model: "auto"` classifier: it reads the system prompt and the last
// user turn (and x-route-hint), detects the script (English, Arabic, mixed), scores each configured
// intent (by default security, then reasoning) from whole-word term matches, and names the route
// that should serve the request. It also owns the labelled evaluation set under testdata/ and Eval,
// which `gateway route eval FILE` prints.
//
// How a request is decided, in order:
//
//  1. A route hint that names a SAIF specialist (rev_eng, webapp, …) picks Rules.SpecialistRoute;
//     a hint that names one of the classifier's routes picks that route.
//  2. Otherwise each intent, in precedence order, is scored; the first whose score reaches its
//     min_score (and whose languages include the detected one) wins.
//  3. Otherwise the request is general and goes to Rules.Default.
//
// A long system prompt is read once and kept (per partition, the server's API key) for the
// requests that send it again; see systems and RouteMessagesFor.
//
// Scoring is deliberately simple so that explain can show why: every distinct term that matches in
// the last user turn adds its weight, one that matches only in the system prompt adds half of it,
// an "against" term (a word that shows another sense, such as "biology" next to "virus") subtracts
// its weight, and a term that follows a negation cue in the same clause ("not asking about
// hacking") counts for nothing. A cue of one word reaches only the term right after it: "not step
// by step" is negated, "not sure if this is malware" is not. A pair (IntentRule.Pairs) adds its
// weight once when a word of each of its sides is in one clause: "is public wifi safe?" is a
// security question through the pair of a safety word and a security object, while neither word
// weighs anything alone, so "is it safe to eat raw eggs" and "the wifi link" stay general.
//
// Matching is on whole words after normalisation, never on substrings: "patch" does not match
// "dispatch". Normalisation lower-cases, strips Arabic diacritics and tatweel, folds alef/hamza
// forms to bare alef, ta marbuta (and the heh forms of Persian, Urdu and Kurdish keyboards) to ha
// and alef maqsura to ya, and maps Arabic-Indic digits to ASCII.
// Invisible format characters (zero-width space and joiners, soft hyphen, direction marks) are
// dropped inside a word; fullwidth and mathematical letters, and Cyrillic or Greek lookalikes in a
// word with a Latin letter or in a word of nothing but lookalikes ("ЕХРӀОІТ", which then counts
// for neither language), read as ASCII, so that none of them hides a term. An English word glued
// to Arabic letters before it ("الـXSS") is a word of its own, the article or clitic dropped; the
// article written apart from it ("حقن الـ SQL") is dropped too, so that it does not stand between
// the words of a term.
// Words are then reduced to a light stem on both sides (terms and text): English plurals and "'s";
// for Arabic the article and its fused prepositions (ال، وال، بال، كال، فال، لل) and common
// suffixes (ات، ون، ين، ان، ها، هم، ه، ي، يه). A text word that is not a known stem is tried once
// more without a leading و، ف، ب، ل or ك, so "لاختراق" finds "اختراق" while "برهن" (a term) is
// never mistaken for "رهن".
//
// Ambiguous words are decided by weight rather than by a rule per word: "kernel", "patch",
// "attack", "password" and "tls" weigh 1, so "popcorn kernel"
// or "patch my jeans" stay general (and "popcorn", "jeans" are against-terms besides), while "patch
// the kernel" (1+1) or "kernel exploit" (via "exploit") reach SAIF. Code needs no special mode: a
// snippet with strcpy (weight 1) and "is this vulnerable?" (2) is security; the same snippet with
// "what does this do?" is general.
//
// Persian is read as Arabic script (its letters fold to Arabic ones and no letter tells the two
// languages apart), so a Persian prompt goes where its terms send it and otherwise, like an
// Arabic one, to the default; the security list carries Persian's own words (فیشینگ، بدافزار،
// باج‌افزار، هک، تست نفوذ…), whose zero-width non-joiner is dropped inside the word.
//
// Accuracy on testdata/labelled.jsonl is guarded by TestLabelledAccuracy (≥ 90%); the held-out
// testdata/heldout.jsonl, written after the rules were tuned, by TestHeldOutAccuracy (≥ 80%).
package autoroute
