package autoroute

// The built-in term lists. They are functions, not package variables, so that no caller can edit
// what another one gets. Weight 2 (no suffix) decides alone; "^1" marks a word that is only a hint
// of the intent and needs a second one.

func securityTerms() []string {
	return []string{
		// Vulnerabilities and their identifiers.
		"cve", "cwe", "cvss", "nvd", "owasp", "mitre", "zero day", "zero-day", "0day", "0-day",
		"vulnerability", "vulnerabilities", "vulnerable", "vuln", "vulns", "security flaw", "security hole",
		"security bug", "security issue", "security risk", "security risks",
		"exploit", "exploitable", "exploitation", "exploiting", "exploited", "exploit db",
		"proof of concept exploit", "poc exploit",
		// Memory safety and code-level flaws.
		"buffer overflow", "buffer overrun", "heap overflow", "stack smashing", "stack buffer overflow",
		"integer overflow^1", "use after free", "double free", "format string^1", "out of bounds write",
		"race condition^1", "toctou", "memory corruption", "null pointer dereference^1",
		"strcpy^1", "strcat^1", "sprintf^1", "scanf^1", "memcpy^1", "unsafe^1",
		"shellcode", "rop chain", "return oriented programming", "return-to-libc", "aslr", "dep bypass",
		"nx bit^1", "stack canary", "stack canaries", "heap spray", "heap spraying",
		// Web and injection.
		"sql injection", "sqli", "command injection", "code injection", "injection attack", "ldap injection",
		"injection^1", "xss", "cross site scripting", "cross-site scripting", "csrf", "cross site request forgery",
		"ssrf", "xxe", "rce", "remote code execution", "lfi", "rfi", "path traversal", "directory traversal",
		"insecure deserialization", "deserialization^1", "idor", "open redirect", "clickjacking",
		"session hijacking", "session fixation", "jwt^1", "cors^1", "csp^1", "content security policy",
		"input validation^1", "sanitize^1", "sanitise^1", "sanitization^1", "escape user input",
		"prepared statement^1", "prepared statements^1", "parameterized queries^1",
		// Malware and attackers.
		"malware", "ransomware", "spyware", "adware", "trojan", "trojan horse", "rootkit", "bootkit", "keylogger",
		"botnet", "worm^1", "computer virus", "virus", "viruses", "antivirus", "anti-virus", "anti virus",
		"backdoor", "backdoors", "reverse shell", "bind shell", "web shell", "webshell", "suspicious^1", "attachment^1", "lockbit", "ransom^1", "ransom note^1", "malicious", "payload^1", "dropper", "c2^1", "command and control",
		"command-and-control", "beacon^1", "persistence mechanism", "exfiltration", "exfiltrate",
		"data exfiltration", "lateral movement", "privilege escalation", "privesc", "escalate privileges",
		"sandbox escape", "container escape", "jailbreak^1", "infected", "infection^1", "quarantine^1",
		"hack^1", "hacks^1", "hacking", "hacker", "hackers", "hacked", "cracker^1", "cracking^1", "crack^1",
		"attacker", "attackers", "attack^1", "attacks^1", "cyberattack", "cyber attack", "attack surface",
		"attack vector", "threat^1", "threat actor", "threat model", "threat modeling", "threat modelling",
		"threat intelligence", "threat hunting", "apt group", "advanced persistent threat",
		"ddos", "dos attack", "denial of service", "brute force^1", "brute-force^1", "brute force attack", "brute force attempts", "login attempts^1", "failed password", "failed login^1", "fail2ban",
		"dictionary attack", "rainbow table", "rainbow tables", "credential stuffing", "password spraying",
		"password cracking", "crack passwords", "crack the password", "phishing", "spear phishing", "smishing",
		"vishing", "social engineering", "spoofing", "spoofed^1", "arp spoofing", "dns poisoning",
		"cache poisoning", "mitm", "man in the middle", "man-in-the-middle", "eavesdropping^1",
		"packet sniffing", "sniffing^1", "sniffer^1", "evil twin", "skimming^1",
		"data breach", "breach^1", "breached", "compromised^1", "compromise^1", "intrusion", "intruder",
		"intrusion detection", "incident response", "indicators of compromise", "ioc", "iocs", "ttps",
		// Tools and practice.
		"penetration testing", "penetration test", "pentest", "pentesting", "pentester", "pen test",
		"pen testing", "red team", "red teaming", "blue team", "purple team", "bug bounty", "ctf", "capture the flag",
		"metasploit", "meterpreter", "msfvenom", "nmap", "burp", "burp suite", "sqlmap", "hashcat",
		"john the ripper", "mimikatz", "cobalt strike", "bloodhound", "hydra^1", "nessus", "openvas",
		"nikto", "gobuster", "wireshark^1", "tcpdump^1", "aircrack", "kali", "kali linux", "shodan",
		"port scan", "port scanning", "port scanner", "vulnerability scanner", "fuzzing", "fuzzer", "fuzz testing",
		"reverse engineering", "reverse engineer", "reverse-engineer", "reverse-engineering",
		"disassemble^1", "disassembly^1", "disassembler^1", "decompile^1", "decompiler^1", "ghidra", "ida pro",
		"radare2", "binary ninja", "x64dbg", "ollydbg", "gdb^1", "unpack^1", "packer^1", "obfuscated^1",
		"obfuscation^1", "deobfuscate", "anti-debugging", "anti debugging",
		"forensics", "forensic", "digital forensics", "memory forensics", "volatility framework",
		"chain of custody", "kerberoasting", "pass the hash", "pass-the-hash", "golden ticket", "dcsync", "ntlm relay", "active directory attack", "sigma rule", "detection rule", "detection rules", "detection engineering", "encoded powershell", "powershell^1", "defenders^1", "yara", "snort", "suricata", "siem", "soc analyst", "edr", "xdr",
		"honeypot", "sandboxing^1", "cybersecurity", "cyber security", "cyber-security", "infosec",
		"security^1", "security problem", "security problems", "security concern", "security concerns", "security implications", "untrusted^1", "untrusted input", "untrusted data", "api key^1", "api keys^1", "secrets^1", "secure^1", "insecure", "securely^1", "security audit", "security review",
		"security patch", "security update", "security advisory", "hardening", "harden^1",
		"firewall", "firewalls", "waf", "iptables^1", "selinux^1", "apparmor^1", "vpn^1", "tor^1",
		"patch^1", "patches^1", "patched^1", "patching^1", "unpatched", "kernel^1", "kernel module^1",
		"privilege^1", "privileges^1", "root access^1", "setuid", "suid", "sudoers^1", "chmod 777^1",
		"is this safe^1", "is it safe^1", "is this secure", "is this code secure", "is this code safe", "safe from",
		// Credentials and cryptography.
		"password^1", "passwords^1", "passphrase^1", "credential^1", "credentials^1", "password hash",
		"password hashing", "hashing passwords", "bcrypt", "salt and hash", "salted hash", "2fa", "mfa",
		"two factor", "two-factor", "multi-factor authentication", "authentication^1", "authorization^1", "access control^1", "least privilege",
		"encryption", "encrypt", "encrypted^1", "decrypt", "decryption", "cipher^1", "ciphertext^1",
		"plaintext^1", "cryptography", "cryptographic^1", "symmetric encryption", "asymmetric encryption", "cryptanalysis", "aes^1", "rsa^1", "tls^1",
		"ssl^1", "https^1", "certificate^1", "private key^1", "public key^1", "side channel",
		"side-channel", "timing attack", "padding oracle", "spectre", "rowhammer", "heartbleed",
		"log4shell", "log4j^1", "eternalblue", "wannacry", "stuxnet", "mirai", "emotet", "notpetya",
		"steganography^1", "keystroke logging", "tamper^1", "tampering", "sensitive data^1", "leak^1",
		"leaked^1", "data leak",

		// Arabic.
		"ثغرة", "ثغرات", "ثغره امنيه", "الثغرات الأمنية", "نقاط الضعف", "نقطة ضعف", "نقاط ضعف",
		"استغلال الثغرات", "استغلال ثغرة", "استغلال^1", "يستغل^1", "المستغل^1",
		"برمجيات خبيثة", "برمجية خبيثة", "برامج خبيثة", "برنامج خبيث", "شيفرة خبيثة", "شفرة خبيثة",
		"كود خبيث", "خبيث", "خبيثة", "فيروس", "فيروسات", "مضاد الفيروسات", "مكافح الفيروسات",
		"اختراق", "اختراقات", "مخترق", "المخترقين", "يخترق", "اخترق", "اختبار الاختراق",
		"قرصنة", "القرصنة الإلكترونية", "قراصنة الإنترنت", "هاكر", "هاكرز", "هكر",
		// The verb made of هكر in everyday writing: passive "got hacked" (Egyptian and Levantine
		// اتهكر, Gulf انهكر) and the verbal noun weigh as "hacked" and "hacking"; "hack" as "hack".
		"اتهكر", "اتهكرت", "انهكر", "انهكرت", "تهكر", "تهكرت", "مهكر", "تهكير", "يهكر^1", "اهكر^1",
		"تشفير", "فك التشفير", "مشفر^1", "أشفر", "يشفر", "نشفر", "تأمين^1", "لتأمين^1", "التشفير غير المتماثل^1",
		"هجوم^1", "هجمات^1", "مهاجم", "المهاجم", "المهاجمين", "هجوم إلكتروني", "هجمات إلكترونية",
		"هجوم سيبراني", "هجمات سيبرانية", "هجوم حجب الخدمة", "حجب الخدمة", "الحرمان من الخدمة",
		"جدار ناري", "جدار الحماية", "جدران الحماية",
		"الهندسة العكسية", "هندسة عكسية",
		"حقن sql", "حقن الأوامر", "حقن الشيفرة", "حقن الكود", "حقن قواعد البيانات",
		// A broken plural (برامج) does not stem to its singular (برنامج): both are listed.
		"برامج الفدية", "برمجيات الفدية", "برنامج الفدية", "برنامج التجسس", "فدية^1", "التصيد", "التصيد الاحتيالي", "تصيد احتيالي", "رسائل تصيد",
		"الأمن السيبراني", "امن سيبراني", "أمن المعلومات", "أمن الشبكات", "أمن التطبيقات", "أمن^1",
		"أمني^1", "أمنية^1", "الهندسة الاجتماعية", "تصعيد الصلاحيات", "رفع الصلاحيات", "صلاحيات^1",
		"باب خلفي", "أبواب خلفية", "الباب الخلفي", "حصان طروادة", "طروادة",
		"شبكة بوت", "بوت نت", "روتكيت", "برامج التجسس", "برمجيات التجسس", "تجسس^1",
		"تجاوز سعة المخزن المؤقت", "فيض المخزن المؤقت", "تجاوز سعة^1", "فيض^1", "تجاوز المخزن",
		"النواة^1", "نواة لينكس^1", "ترقيع^1", "رقعة أمنية", "تحديث أمني", "تحديثات أمنية",
		"التحليل الجنائي الرقمي", "الأدلة الرقمية", "جنائي^1", "تحليل البرمجيات الخبيثة",
		"تسريب البيانات", "تسريب^1", "تسرب البيانات", "اختراق البيانات", "سرقة البيانات", "سرقة كلمات المرور",
		"كلمة المرور^1", "كلمات المرور^1", "كلمة السر^1", "باسورد^1", "كسر كلمة المرور", "كسر كلمات المرور",
		"المصادقة^1", "المصادقة الثنائية", "التحقق بخطوتين", "التحقق الثنائي", "مفتاح خاص^1", "شهادة رقمية^1",
		"ثغرة يوم الصفر", "يوم الصفر", "اختبار الاختراق", "فريق أحمر", "الفريق الأحمر",
		"تحليل البرمجيات", "عينة خبيثة", "انتحال^1", "انتحال الهوية", "رجل في المنتصف", "هجوم الوسيط",
		"آمن^1", "آمنة^1", "محمي^1", "حماية^1", "هل هذا الكود آمن", "هل الكود آمن", "متسلل", "المتسللين", "متسللين",

		// Persian. Its letters fold to Arabic ones (ی to ي, ک to ك), but its security words are
		// its own and share no stem with the Arabic terms. The zero-width non-joiner of
		// باج‌افزار is dropped inside the word, so the word written with it and run together
		// (باجافزار) meet; written apart (باج افزار) it is a phrase, listed too. نفوذ is also
		// "influence" (in Arabic as well), so alone it is only a hint, as "attack" is.
		"فیشینگ", "بدافزار", "بد افزار", "باج\u200cافزار", "باج افزار", "جاسوس\u200cافزار", "جاسوس افزار",
		"هک", "هک شده", "نفوذ^1", "تست نفوذ", "آزمون نفوذ", "نفوذگر", "آسیب\u200cپذیری", "آسیب پذیری",
		"امنیت^1", "امنیت سایبری", "امنیت شبکه", "حمله سایبری", "ویروس", "ویروس کامپیوتری",
		"رمز عبور^1",
	}
}

// securityPairs are the safety questions about a thing that is a security question only as such:
// "is public wifi safe?", "is this link legit?", "هل هذا الرابط آمن؟", while "is it safe to eat
// raw eggs" and "send me the wifi link" are not. The objects are things whose safety is that of
// a computer or an account: "site", "file", "app" and "extension" are left out, since "is this
// site safe to swim at", "is it safe to file my taxes online" or "hair extensions" are not.
func securityPairs() []string {
	return []string{
		"safe|safely|safety|unsafe|secure|insecure|legit|legitimate|trustworthy|scam|dangerous|risky" +
			" & wifi|wi-fi|hotspot|public network|link|url|click|clicking|attachment|download|downloading|" +
			"qr code|usb stick|usb drive|flash drive|usb charger|charging station|browser extension|" +
			"chrome extension|apk|exe|macro|macros|pdf|email|e-mail|sms|text message|bluetooth|router|" +
			"vpn|password manager|torrent|website",
		"آمن|آمنة|امان|الأمان & رابط|روابط|واي فاي|الواي فاي|شبكة عامة|مرفق|المرفق|ايميل|بريد إلكتروني|رسالة نصية|تطبيق مجهول",
	}
}

func securityAgainst() []string {
	return []string{
		// "virus", "infection", "worm" in their biological sense.
		"biology", "biological", "biologist", "flu", "influenza", "covid", "covid-19", "coronavirus",
		"disease", "diseases", "vaccine", "vaccines", "vaccination", "immune", "immune system", "medical",
		"medicine", "doctor", "patient", "patients", "symptoms", "fever", "cells", "bacteria", "pandemic",
		"epidemic", "hiv", "measles", "plants^1", "garden", "gardening", "earthworm", "earthworms",
		"etymology", "history of the word", "origin of the word", "meaning of the word", "word origin",
		// "kernel" elsewhere.
		"popcorn", "corn", "wheat", "grain", "grains", "nut", "seed", "seeds", "kernel trick",
		"kernel density", "gaussian kernel", "kernel function", "svm", "support vector", "convolution kernel",
		"jupyter kernel", "ipython kernel", "cuda kernel", "gpu kernel", "kernel of truth",
		// "attack", "hack", "patch", "security", "breach" in everyday senses.
		"heart attack", "panic attack", "anxiety attack", "asthma attack", "shark attack", "attack on titan",
		"chess", "football", "soccer", "basketball", "hockey", "rugby", "striker", "pokemon", "pokémon",
		"life hack", "life hacks", "hackathon", "hacker news", "growth hacking", "hackers movie",
		"pumpkin patch", "eye patch", "nicotine patch", "sewing", "jeans", "fabric", "quilt",
		"social security", "job security", "food security", "security guard", "security deposit",
		"security council", "financial security", "emotional security",
		"breach of contract", "breach of trust", "whale", "whales",
		"story^1", "poem", "novel", "movie", "film", "song", "lyrics", "haiku",
		"military", "war", "battle", "army", "soldiers", "historical", "ancient", "castle", "mythology", "myth", "greek", "legend", "troy", "homer", "odyssey", "iliad",
		"kidnapping", "kidnapper",

		// Arabic.
		"علم الأحياء", "الأحياء", "بيولوجي", "بيولوجيا", "الإنفلونزا", "انفلونزا", "كورونا", "مرض", "الأمراض",
		"لقاح", "اللقاحات", "طبيب", "المناعة", "الجهاز المناعي", "الخلية", "خلايا", "البكتيريا", "عدوى^1",
		"أصل كلمة", "تاريخ كلمة", "معنى كلمة",
		"الذرة", "الفشار", "فشار", "بذرة", "بذور", "الحبوب", "نواة الذرة", "نواة الخلية", "نواة التمر", "التمر",
		"نوبة قلبية", "كرة القدم", "الشطرنج", "المباراة", "الفريق^1",
		"الأمن الغذائي", "مجلس الأمن", "الضمان الاجتماعي", "الأمن الوطني", "حارس أمن",
		"قصة", "قصيدة", "رواية", "فيلم", "الأفلام", "أفلام", "المسلسلات", "تأمين صحي", "التأمين الصحي", "شركة تأمين", "تأمين السيارة", "أغنية", "الحرب", "الجيش", "معركة", "التاريخ^1",

		// Persian: ویروس in its medical sense.
		"کرونا", "بیماری", "واکسن",
	}
}

func reasoningTerms() []string {
	return []string{
		"step by step", "step-by-step", "think step by step", "reason about", "reason through",
		"reasoning", "think through", "think it through", "think carefully", "think hard",
		"chain of thought", "show your work", "show your reasoning", "explain your reasoning",
		"justify", "justify your answer", "walk me through^1", "work through", "work out^1",
		"compare and contrast", "compare^1", "contrast^1", "pros and cons^1", "trade-offs^1", "tradeoffs^1",
		"trade offs^1", "weigh the^1", "which is better^1", "which is more^1", "evaluate the argument",
		"logical deduction", "deduction", "deduce", "deductive", "inductive", "induction^1", "by induction",
		"prove", "proves^1", "proving", "proof", "prove that", "disprove", "theorem", "lemma", "corollary",
		"axiom", "axioms", "derive", "derivation", "rigorous", "rigorously", "formal proof", "qed",
		"logic^1", "explain the logic", "logical^1", "is this argument valid", "is the argument valid", "argument valid", "logically", "logic puzzle", "puzzle", "riddle", "brain teaser", "brainteaser",
		"syllogism", "paradox^1", "fallacy^1", "premise^1", "premises^1", "conclusion^1", "valid argument",
		"if and only if", "iff", "contradiction^1", "counterexample", "necessary and sufficient",
		"knights and knaves", "truth teller", "liar^1", "who is lying", "who is telling the truth",
		"solve for", "integer solutions", "solutions to^1", "show that", "weighings", "compound interest^1", "catch up^1", "how long would it take^1", "always lies^1", "tells the truth^1", "solve^1", "solve this", "equation^1", "equations^1", "inequality^1", "integral", "evaluate the integral",
		"integrate^1", "derivative^1", "differentiate^1", "limit of^1", "calculate^1", "compute^1",
		"how many ways", "how many^1", "probability", "expected value", "combinatorics", "permutations^1",
		"combinations^1", "prime number^1", "prime numbers^1", "divisible", "modulo^1", "remainder when",
		"arithmetic^1", "algebra^1", "geometry^1", "triangle^1", "math^1", "maths^1", "mathematical^1",
		"optimal strategy", "game theory", "nash equilibrium", "fermi estimate", "estimate^1",
		"big o", "time complexity", "space complexity", "complexity^1", "recurrence", "dynamic programming^1",
		"trolley problem", "dilemma^1", "thought experiment", "hypothetical^1", "hypothesis^1",
		"what follows from", "implies^1", "therefore^1", "suppose^1", "assume^1", "given that^1",
		"sequence^1", "next number", "the next term", "analyze the argument", "analyse the argument",
		"critically^1", "critique the argument", "root cause^1", "why exactly^1", "in detail^1",
		"minimum number^1", "maximum number^1", "optimize^1", "minimize^1", "maximize^1",

		// Arabic.
		"خطوة بخطوة", "خطوه خطوه", "فكر خطوة بخطوة", "برهن", "برهن أن", "أثبت", "اثبت أن", "إثبات",
		"البرهان", "برهان", "مبرهنة", "قارن بين", "قارن^1", "المقارنة^1", "مقارنة^1", "وازن بين",
		"استنتج", "استنتاج", "نستنتج", "يستنتج", "تستنتج", "ما احتمال", "احتمالية^1", "شرح الخطوات", "اشرح الخطوات", "وضح الخطوات", "يكذب^1", "يقول الصدق^1", "تثبت^1", "تثبت لي", "اثبت لي", "الاستنتاج", "الاستدلال", "استدلال", "الاستنباط", "استنبط", "الاستقراء",
		"بالاستقراء", "منطقي^1", "المنطق^1", "منطقيا", "الاستدلال المنطقي", "علل", "علل إجابتك", "فسر لماذا",
		"حل المعادلة", "المعادلة^1", "معادلة^1", "معادلات^1", "المتباينة^1", "مسألة^1", "مسألة رياضية",
		"لغز", "ألغاز", "أحجية", "احتمال^1", "الاحتمالات^1", "نظرية^1", "تكامل^1", "مشتقة^1", "التفاضل^1",
		"احسب^1", "كم عدد^1", "كم طريقة", "بكم طريقة", "كم عدد الطرق", "فكر^1", "فكر بعمق", "حلل^1", "تحليل منطقي", "تناقض^1", "مفارقة^1",
		"الإيجابيات والسلبيات^1", "المزايا والعيوب^1", "المميزات والعيوب^1", "ما الفرق بين^1",
		"عدد أولي^1", "الأعداد الأولية^1", "قابل للقسمة", "الحد الأدنى^1", "الحد الأقصى^1",
		"مقدمات^1", "النتيجة^1", "حجة^1", "مغالطة", "مغالطة منطقية", "فرضية^1", "معضلة^1", "افترض^1",
		"اشرح منطقك", "وضح تفكيرك", "بالتفصيل^1", "الرياضيات^1", "رياضيا^1", "هندسة رياضية",
	}
}

func reasoningAgainst() []string {
	return []string{
		"recipe", "recipes", "translate^1", "translation^1", "poem", "haiku", "song", "lyrics",
		"weather", "joke", "jokes",
		"وصفة", "ترجم^1", "ترجمة^1", "قصيدة", "نكتة", "الطقس",
	}
}

func defaultNegations() []string {
	return []string{
		"not asking about", "not asking how", "i'm not asking", "im not asking", "not asking",
		"not about", "isn't about", "is not about", "not related to", "unrelated to", "nothing to do with",
		"not talking about", "not a security", "not in the security sense", "not the computer",
		"not computer", "not interested in", "not looking for", "not trying to", "don't want to",
		"do not want to", "no need to", "no need for", "don't need", "do not need", "don't explain",
		"do not explain", "don't show", "do not show", "without explaining", "skip the", "rather than",
		"instead of", "not the kind", "not the cyber", "not cyber", "no hacking", "not hacking",
		"not", // one word: it reaches only the next ("not step by step"), see oneWordReach
		"لا أسأل عن", "لست أسأل عن", "لا أقصد", "لا اقصد", "لا أعني", "ليس عن", "ليس سؤالا عن",
		"لا علاقة له", "لا علاقة لها", "لا علاقة لسؤالي", "لا يتعلق", "ليس له علاقة", "بدون شرح",
		"دون شرح", "لا داعي", "لا حاجة", "لا تشرح", "ليس بالمعنى", "لا أريد", "بدلا من",
	}
}
