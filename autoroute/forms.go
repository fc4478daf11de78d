package autoroute

// Arabic presentation forms: the letters drawn in their initial, medial, final or isolated shape
// (U+FB50–U+FBFF, Presentation Forms-A's single letters; U+FE70–U+FEFC, Forms-B), which text
// copied out of a PDF often has instead of the letters. Each table holds two bytes a code point,
// from its first one: the Arabic letter its compatibility decomposition (NFKC, Unicode 14) draws,
// "LA" for a lam-alef ligature, ".." for a form of a diacritic or of tatweel (dropped, as they
// are), "--" for anything else (a sign, an unassigned code point: it ends the word).
const (
	formsAFirst rune = 0xFB50
	formsAEnd        = formsAFirst + rune(len(formsA)/2) // past the last
	formsA           = "" +
		"ٱٱٻٻٻٻپپپپڀڀڀڀٺٺ" + // U+FB50
		"ٺٺٿٿٿٿٹٹٹٹڤڤڤڤڦڦ" + // U+FB60
		"ڦڦڄڄڄڄڃڃڃڃچچچچڇڇ" + // U+FB70
		"ڇڇڍڍڌڌڎڎڈڈژژڑڑکک" + // U+FB80
		"ککگگگگڳڳڳڳڱڱڱڱںں" + // U+FB90
		"ڻڻڻڻۀۀہہہہھھھھےے" + // U+FBA0
		"ۓۓ----------------------------" + // U+FBB0
		"--------------------------------" + // U+FBC0
		"------ڭڭڭڭۇۇۆۆۈۈ--ۋۋ" + // U+FBD0
		"ۅۅۉۉېېېېىى------------" + // U+FBE0
		"------------------------یییی" // U+FBF0
	formsBFirst rune = 0xFE70
	formsBEnd        = formsBFirst + rune(len(formsB)/2)
	formsB           = "" +
		"......--..--...................." + // U+FE70
		"ءآآأأؤؤإإئئئئااب" + // U+FE80
		"بببةةتتتتثثثثججج" + // U+FE90
		"جححححخخخخددذذررز" + // U+FEA0
		"زسسسسششششصصصصضضض" + // U+FEB0
		"ضططططظظظظععععغغغ" + // U+FEC0
		"غففففققققككككللل" + // U+FED0
		"لممممننننههههووى" + // U+FEE0
		"ىييييLALALALALALALALA------" // U+FEF0
)

// presentationForm is what scan makes of the presentation form r: letter (0 for none) and, for a
// lam-alef, lamAlef; keep is false when r ends the word.
func presentationForm(r rune) (letter rune, lamAlef, keep bool) {
	var e string
	switch {
	case r >= formsAFirst && r < formsAEnd:
		e = formsA[2*(r-formsAFirst):][:2]
	case r >= formsBFirst && r < formsBEnd:
		e = formsB[2*(r-formsBFirst):][:2]
	default:
		return 0, false, false
	}
	switch e {
	case "--":
		return 0, false, false
	case "..":
		return 0, false, true
	case "LA":
		return 0, true, true
	}
	return rune(e[0]&0x1F)<<6 | rune(e[1]&0x3F), false, true
}
