"""The write guard's rules: what in a memory's text looks like prompt injection or hidden characters.

A memory ends up in a model's prompt (the context block, recall, the tool's replies), so a stored
text can try to steer the agent that reads it later ("ignore your instructions and ...") or hide
what it says from the person who reads it in the dashboard. Every write's uid, key and value pass
through `guard_scan` before they are stored (memories.services); what happens to a write that
matches is the account's policy (`AccountPolicy.guard_mode`: allow, flag or hold).

Each rule below has a stable name (stored on a flagged entry, shown in the API and the dashboard),
one sentence saying why a memory that matches is suspect, and a regular expression. The rules are
of two kinds:

- injection: phrasings that address the model reading the memory rather than describe the person
  it is about: orders to ignore or replace its instructions, jailbreak personas, forged turn
  markers and chat-template tokens, orders to send data somewhere, images that leak data when
  shown, instructions hidden in markup, orders to keep something from the user.
- invisible: characters that change what a text means without showing: bidirectional overrides
  that reverse letters, embeddings and isolates inside left-to-right text (the "Trojan Source"
  trick), tag characters (text invisible to a reader but read by a model), zero-width characters,
  runs of variation selectors (data smuggled after one visible character), and zero-width joiners
  and spaces outside the places they belong. The injection rules read a text with these
  characters taken out, so splitting a word with them hides nothing from those rules.

What is legitimate and never flagged: the zero-width joiner inside emoji sequences (👨‍👩‍👧, 🏳️‍🌈)
and the tag characters of subdivision flags (🏴 of England); the zero-width non-joiner and joiner
beside letters of scripts whose spelling uses them (Persian, Arabic, Urdu, Kurdish, the Indic
scripts, Khmer, Mongolian, ...); the left-to-right and right-to-left marks (U+200E, U+200F,
U+061C); the zero-width space in text of the scripts written without spaces between words
(Khmer, Thai, Lao, Burmese, Tibetan, Chinese, Japanese), where it marks the word breaks;
embeddings and isolates in text that holds right-to-left letters, and one that only sets a whole
text's direction (at its start, closed at its end or not at all); an override around
characters it does not reorder; a single variation selector (❤️, and the ideographic variation
sequences of CJK names). `manage.py benchmark_guard` measures the false positives on text these
rules were not written from.

Speed: every pattern is compiled once, at import, and searched on the lowered text. A scan
splits that text into words in one pass and searches only the rules whose anchor words or marks it
holds (the invisible rules only when it holds one of their characters), so an ordinary memory
costs that pass and a few set lookups. Each pattern starts with a literal or a class of characters,
so the regular expression engine skips ahead to where it could match; no pattern can backtrack
without bound: every gap between words is bounded.

What this does not catch: an injection phrased in words no rule knows, in another language,
spelled with look-alike letters of other scripts, or encoded. The guard is a tripwire for the
common forms, not a proof that a text is harmless.
"""

import re
from dataclasses import dataclass

from django.db import models


class RuleKind(models.TextChoices):
    INJECTION = "injection", "prompt injection"
    INVISIBLE = "invisible", "invisible or bidirectional characters"


# eq=False: a rule is itself (hashed by identity), which keeps the scan's set of candidates cheap.
@dataclass(frozen=True, eq=False)
class GuardRule:
    """One pattern the guard looks for, and what must be in a text for the pattern to have a chance.

    `pattern` is searched on the lowered text (so it is written in lower case). `words` and `marks`
    are an injection rule's anchors: every text the pattern matches holds one of the words (whole,
    of 3 letters or more, as `[a-z]{3,}` splits the lowered text) or one of the marks (substrings
    of it); the invisible rules are searched whenever a text holds one of the characters they look
    for. Text that `allowed` matches is taken out before the pattern is searched (legitimate
    sequences made of the same characters); a text that `unless` matches anywhere does not break
    the rule.
    """

    name: str
    kind: str
    reason: str
    pattern: str
    words: frozenset[str] = frozenset()
    marks: tuple[str, ...] = ()
    allowed: str = ""
    unless: str = ""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _starting(words: str) -> str:
    """An alternation of whole words that starts with a literal, so the engine can skip ahead to it.

    `\\b` in front would hide the first letters from the engine; each word checks instead, once it
    has matched, that no letter stands before it.
    """
    return "(?:" + "|".join(f"{word}(?<!\\w{word})" for word in words.split()) + ")"


# Words that name what an agent is told to follow.
_ORDERS = (
    r"(?:instructions?|prompts?|directives?|directions|guidelines|guardrails|rules|commands|orders|programming"
    r"|constraints|restrictions|policies|context)"
)
_EARLIER = (
    r"(?:previous|prior|preceding|above|earlier|former|original|initial|existing|system|developer|safety|"
    r"old|given|current)"
)
_DETERMINER = r"(?:(?:all|any|every|each)\s+(?:of\s+)?)?(?:the\s+|your\s+|these\s+|those\s+|such\s+|its\s+)?"
_PERSONAS = r"(?:dan|stan|dude|an?\s+(?:unrestricted|unfiltered|uncensored|jailbroken|unaligned|amoral))\b"

# Scripts whose spelling puts a zero-width non-joiner or joiner beside their letters: Arabic (and
# Persian, Urdu, Kurdish), Syriac, N'Ko, Mandaic, the Indic scripts, Tibetan, Myanmar, Khmer, Mongolian.
_JOINING_SCRIPTS = (
    "\u0600-\u06ff\u0700-\u074f\u0750-\u077f\u07c0-\u07ff\u0840-\u085f\u0870-\u08ff\u0900-\u0dff"
    "\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u1800-\u18af\ua8e0-\ua8ff\ufb50-\ufdff\ufe70-\ufefc"
)
# Emoji (a generous cover of Extended_Pictographic), with the emoji presentation selector and the
# skin tones that may stand before a joiner in a sequence.
_PICTOGRAPHS = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u25fe\u2600-\u27bf"
    "\u2934\u2935\u2b05-\u2b55\u3030\u303d\u3297\u3299\ufe0f\U0001f000-\U0001faff\U0001fc00-\U0001fffd"
)
# Viramas (and the Khmer coeng): after one, a joiner asks for a half form or a chillu.
_VIRAMAS = "\u094d\u09cd\u0a4d\u0acd\u0b4d\u0bcd\u0c4d\u0ccd\u0d4d\u0dca\u1039\u103a\u17d2"
_JOINABLE = _JOINING_SCRIPTS + _PICTOGRAPHS + _VIRAMAS
_JOINERS = "\u200c\u200d"
# Letters of the scripts that never spell with joiners (Latin, Greek, Cyrillic, CJK, ...).
_OTHER_LETTERS = f"[^\\W\\d_{_JOINING_SCRIPTS}]"
# Letters of the right-to-left scripts: Hebrew, Arabic, Syriac, Thaana, N'Ko, Samaritan, Mandaic, ...
_RIGHT_TO_LEFT = "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]"
_EMBEDDINGS = "\u202a\u202b\u202c\u2066-\u2069"
_ZERO_WIDTH = "\u2060-\u2064\u206a-\u206f\ufeff\u3164\uffa0\ufff9-\ufffb\u17b4\u17b5\U0001d173-\U0001d17a"
_ZERO_WIDTH_SPACE = "\u200b"
# Letters of the scripts written without spaces between words, where U+200B marks where a line may
# break: Thai, Lao, Tibetan, Burmese, Khmer, Javanese, Balinese, and Chinese and Japanese.
_UNSPACED_SCRIPTS = (
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u1980-\u19df\u1a20-\u1aaf\ua980-\ua9df"
    "\u1b00-\u1b7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]"
)
_VARIATION_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_TAGS = "\U000e0000-\U000e007f"
# How far an override reaches: to its pop (U+202C), the end of the line, or this many characters.
_OVERRIDE_REACH = 1000

INJECTION = RuleKind.INJECTION.value
INVISIBLE = RuleKind.INVISIBLE.value

GUARD_RULES: tuple[GuardRule, ...] = (
    GuardRule(
        "ignore-instructions",
        INJECTION,
        "Tells the model reading it to ignore, forget or override the instructions it was given.",
        _starting("ignore disregard forget bypass override overrule abandon discard neglect") + rf"\s+{_DETERMINER}"
        rf"(?:{_EARLIER}\s+(?:\w+\s+)?{_ORDERS}"
        rf"|(?<=all\s)(?:the\s+)?{_ORDERS}"
        rf"|(?<=your\s){_ORDERS}"
        r"|(?<=the\s)(?:above|foregoing)(?:\s+(?:text|message|instructions?))?\s*(?:[.,;:!]|\band\b|$)"
        r"|(?:everything|anything|all|what)\s+(?:(?:you\s+(?:were|have\s+been|'ve\s+been)\s+told)"
        r"|(?:(?:that\s+)?(?:was\s+)?(?:said|written|stated)\s+)?(?:above|before|previously|so\s+far|earlier)))\b",
        words=_words("ignore disregard forget bypass override overrule abandon discard neglect"),
    ),
    GuardRule(
        "new-instructions",
        INJECTION,
        "Announces replacement instructions, a new role or a new goal for the model.",
        _starting("new updated real actual true revised secret hidden override")
        + r"\s+(?:system\s+)?(?:instructions?|directives?|orders|prompt)\s*(?::|-{1,2}\s|=)"
        r"|your(?<!\wyour)\s+(?:new|real|true|actual|only)\s+(?:instructions?|task|goal|objective|purpose|role"
        r"|directive)\s+(?:is|are|:)",
        words=_words("instruction instructions directive directives orders prompt task goal objective purpose role"),
    ),
    GuardRule(
        "system-prompt-probe",
        INJECTION,
        "Asks the model to reveal its system prompt or hidden instructions.",
        _starting("reveal print show repeat output display dump leak disclose expose recite tell")
        + r"\s+(?:me\s+|us\s+)?(?:your|the)\s+(?:entire\s+|full\s+|whole\s+|exact\s+|verbatim\s+)?"
        r"(?:system\s+(?:prompt|message|instructions)|initial\s+prompt|(?:hidden|secret|original|initial)\s+"
        r"(?:instructions|prompt)|(?:instructions|prompt|text)\s+above)",
        words=_words("system prompt instructions above"),
    ),
    GuardRule(
        "jailbreak-persona",
        INJECTION,
        "Opens a role-play jailbreak: a persona without rules (DAN and its kin) the model is told to become.",
        rf"you(?<!\wyou)\s+are\s+now\s+{_PERSONAS}|you(?<!\wyou)\s+are\s+an?\s+(?:unrestricted|unfiltered|uncensored"
        r"|jailbroken|unaligned|amoral)\b|"
        + _starting("act behave respond answer roleplay role-play")
        + rf"\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?{_PERSONAS}"
        r"|do(?<!\wdo)\s+anything\s+now\b|" + _starting("jailbreak jailbroken dan") + r"\s+mode\b"
        r"|pretend(?<!\wpretend)\s+(?:that\s+)?(?:you\s+are|you're|to\s+be)\b[^.\n]{0,60}?\b(?:without|with\s+no"
        r"|free\s+of|not\s+bound\s+by)\s+(?:any\s+)?(?:restrictions|rules|limits|limitations|filters|guidelines"
        r"|censorship|morals|ethics)"
        r"|" + _starting("longer not") + r"\s+bound\s+by\s+(?:any\s+)?(?:of\s+)?(?:your\s+|the\s+|its\s+)?"
        r"(?:rules|guidelines|restrictions|content\s+polic(?:y|ies)|safety\s+(?:rules|guidelines|filters))",
        words=_words("dan stan dude unrestricted unfiltered uncensored jailbroken unaligned amoral")
        | _words("anything jailbreak pretend bound"),
    ),
    GuardRule(
        "chat-template-token",
        INJECTION,
        "Holds a chat template's control token, which can forge a turn of the conversation.",
        r"<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id"
        r"|begin_of_text|end_of_text|eom_id)\|>|\[/?inst\]|<</?sys>>|</?(?:system|assistant|developer)"
        r"(?:[_-](?:prompt|message|instructions))?>",
        marks=("<", "inst]"),
    ),
    GuardRule(
        "fake-turn-marker",
        INJECTION,
        "Starts a line as a system, assistant or human turn would, to pass its text off as one.",
        r"\n[ \t>#*]*\[?(?:system|assistant|developer|human)\]?[ \t]*(?:message|prompt|override|note)?[ \t]*:"
        r"|^\s*(?:\[(?:system|assistant|developer)\]|#{1,6}[ \t]*(?:system|assistant)\b"
        r"|(?:system|developer)[ \t]+(?:message|prompt|override|instructions?)[ \t]*:)",
        words=_words("system assistant developer human"),
    ),
    GuardRule(
        "exfiltration",
        INJECTION,
        "Orders the conversation, memories or secrets sent to an address or a URL.",
        _starting("send post upload forward transmit exfiltrate leak email e-mail submit copy relay")
        + r"\b[^\n]{0,80}?"
        r"\b(?:conversations?|chats?|chat\s+(?:log|history)|messages|history|memor(?:y|ies)|context|system\s+prompt"
        r"|secrets?|passwords?|credentials|api[\s_-]?keys?|tokens?|cookies|personal\s+(?:data|information)"
        r"|user(?:'s)?\s+(?:data|information|details)|private\s+(?:data|information)|everything)\b[^\n]{0,80}?"
        r"\b(?:to|at|into|via|on)\s+(?:https?://|ftp://|wss?://|www\.|[\w.+-]+@[\w-]+\.\w"
        r"|(?:this|that|the\s+following|my|our)\s+(?:url|webhook|endpoint|server|address))",
        words=_words("send post upload forward transmit exfiltrate leak email mail submit copy relay"),
    ),
    GuardRule(
        "data-leaking-link",
        INJECTION,
        "An image (markdown or HTML) or a link with placeholders whose URL carries data: showing it sends the data.",
        r"!\[[^\]\n]{0,200}\]\(\s*<?(?:https?:)?//[^)\s]{0,500}?[?&][^)\s]{0,500}?="
        r"|<img\b[^>]{0,300}?\bsrc\s*=\s*[\"']?(?:https?:)?//[^\"'\s>]{0,500}?[?&][^\"'\s>]{0,500}?="
        r"|//[^\s]{1,500}?[?&][\w-]{1,40}=(?:\{\{?|\$\{|%7b)",
        marks=("//",),
    ),
    GuardRule(
        "hidden-markup",
        INJECTION,
        "Hides text in markup (an HTML or markdown comment, hidden or invisible styling) that a reader does not see "
        "but a model does.",
        r"<!--|\[(?://|comment|hidden)\]:\s*[<(#]"
        r"|<[a-z][^>]{0,300}?(?:\shidden(?:[\s=/>])|display\s*:\s*none|visibility\s*:\s*hidden"
        r"|font-size\s*:\s*0(?![.\d])|opacity\s*:\s*0(?![.\d])|color\s*:\s*transparent)",
        marks=("<", "]:"),
    ),
    GuardRule(
        "conceal-from-user",
        INJECTION,
        "Tells the model to keep something from the person it serves, or to act behind their back.",
        r"(?:do(?<!\wdo)\s+not|"
        + _starting("don't don\u2019t dont never without")[3:]
        + r"\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?(?:\s+this)?\s+to"
        r"|alert(?:ing)?|notify(?:ing)?|let(?:ting)?)\s+(?:the\s+|your\s+)?(?:user|human|operator)s?\b|"
        + _starting("secretly covertly quietly silently")
        + r"\s+(?:send|forward|upload|exfiltrate|e-?mail|transmit|insert|append|include)\b",
        words=_words("user users human humans operator operators secretly covertly quietly silently"),
    ),
    GuardRule(
        "recall-trigger",
        INJECTION,
        "Sets an order to fire when the model reads this memory: instructions addressed to a future reader.",
        _starting("when whenever each every once if")
        + r"(?:\s+time)?\s+(?:you|the\s+(?:assistant|ai|model|agent|llm))\s+"
        r"(?:read|see|recall|load|retrieve|encounter|process)(?:s)?\s+(?:this|these)\s+"
        r"(?:memory|memories|note|message|entry|text|instructions?)\b",
        words=_words("memory memories note message entry text instruction instructions"),
    ),
    GuardRule(
        "decode-and-run",
        INJECTION,
        "Asks for an encoded payload to be decoded and then followed, a way around the other rules.",
        _starting("decode decrypt unscramble deobfuscate de-obfuscate")
        + r"\b[^\n]{0,60}?\b(?:and|then)\s+(?:follow|execute|obey|carry\s+out)\b",
        words=_words("decode decrypt unscramble deobfuscate obfuscate"),
    ),
    GuardRule(
        "bidi-override",
        INVISIBLE,
        "Holds a bidirectional override (U+202D, U+202E) that reverses the letters after it: the text a reader sees "
        "is not the text a model reads.",
        # A right-to-left override before a letter or digit of a left-to-right script, or a
        # left-to-right one before a right-to-left letter, within its reach.
        f"\u202e[^\u202c\n]{{0,{_OVERRIDE_REACH}}}?[^\\W_\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]"
        f"|\u202d[^\u202c\n]{{0,{_OVERRIDE_REACH}}}?{_RIGHT_TO_LEFT}",
    ),
    GuardRule(
        "bidi-embedding",
        INVISIBLE,
        "Holds a bidirectional embedding or isolate (U+202A to U+202C, U+2066 to U+2069) inside left-to-right text, "
        "where it has no job but to reorder what a reader sees (the Trojan Source trick).",
        f"[{_EMBEDDINGS}]",
        # One that sets the whole text's direction: an opening at the start, its closing at the end.
        allowed="\\A\\s*[\u202a\u202b\u2066-\u2068]|[\u202c\u2069]\\s*\\Z",
        unless=_RIGHT_TO_LEFT,
    ),
    GuardRule(
        "tag-characters",
        INVISIBLE,
        "Holds Unicode tag characters (U+E0000 block) outside an emoji flag: text a reader cannot see but a model "
        "reads.",
        f"[{_TAGS}]",
        # A subdivision flag (🏴 of England, Scotland, Wales): U+1F3F4, tag letters, the cancel tag U+E007F.
        allowed="\U0001f3f4[\U000e0020-\U000e007e]{1,32}\U000e007f",
    ),
    GuardRule(
        "zero-width",
        INVISIBLE,
        "Holds an invisible character (word joiner, byte order mark, invisible operators, fillers, deprecated "
        "format characters) that can split a word past a filter or carry hidden data.",
        f"[{_ZERO_WIDTH}]",
    ),
    GuardRule(
        "zero-width-space",
        INVISIBLE,
        "Holds a zero-width space in a text of scripts that separate words with spaces, where it only splits "
        "words or carries hidden data (Khmer, Thai, Burmese, Chinese, ... use it between words: not flagged; one "
        "or two before a word, as some right-to-left typesetting leaves them, hide nothing: not flagged).",
        # Right after a letter or digit (inside or at the end of a word), or a run long enough to carry data.
        f"(?<=\\w){_ZERO_WIDTH_SPACE}|{_ZERO_WIDTH_SPACE}{{3,}}",
        unless=_UNSPACED_SCRIPTS,
    ),
    GuardRule(
        "stray-joiner",
        INVISIBLE,
        "Holds a zero-width joiner or non-joiner beside a letter of a script that never spells with one, or away "
        "from any emoji or letter that does, where it only hides or splits words.",
        # After the joiner: a letter of another script on either side, or nothing it could join on both.
        f"[{_JOINERS}](?:(?<={_OTHER_LETTERS}[{_JOINERS}])|(?={_OTHER_LETTERS})"
        f"|(?<![{_JOINABLE}][{_JOINERS}])(?![{_JOINABLE}]))",
    ),
    GuardRule(
        "variation-selector-run",
        INVISIBLE,
        "Holds two or more variation selectors in a row, which carry hidden data after one visible character.",
        f"[{_VARIATION_SELECTORS}]{{2,}}",
    ),
)

RULES_BY_NAME: dict[str, GuardRule] = {rule.name: rule for rule in GUARD_RULES}

_FLAGS = re.MULTILINE
_COMPILED = {rule.name: re.compile(rule.pattern, _FLAGS) for rule in GUARD_RULES}
_ALLOWED = {rule.name: re.compile(rule.allowed, _FLAGS) for rule in GUARD_RULES if rule.allowed}
_UNLESS = {rule.name: re.compile(rule.unless, _FLAGS) for rule in GUARD_RULES if rule.unless}
_RULES_BY_WORD: dict[str, list[GuardRule]] = {}
for _rule in GUARD_RULES:
    for _word in _rule.words:
        _RULES_BY_WORD.setdefault(_word, []).append(_rule)
_ANCHOR_WORDS = frozenset(_RULES_BY_WORD)
_MARKED_RULES = tuple((mark, rule) for rule in GUARD_RULES for mark in rule.marks)
_INVISIBLE_RULES = tuple(rule for rule in GUARD_RULES if rule.kind == INVISIBLE)
# Every character an invisible rule looks for: a text without any of them skips those rules.
_INVISIBLE_CHARACTERS = re.compile(
    f"[\u202d\u202e{_EMBEDDINGS}{_TAGS}{_ZERO_WIDTH}{_ZERO_WIDTH_SPACE}{_JOINERS}{_VARIATION_SELECTORS}]"
)
_WORD = re.compile("[a-z]{3,}")


def _breaks(rule: GuardRule, lowered: str) -> bool:
    allowed = _ALLOWED.get(rule.name)
    if allowed is not None:
        lowered = allowed.sub("", lowered)
    if _COMPILED[rule.name].search(lowered) is None:
        return False
    unless = _UNLESS.get(rule.name)
    return unless is None or unless.search(lowered) is None


def guard_scan(text: str) -> tuple[str, ...]:
    """The names of the rules `text` breaks, in GUARD_RULES order; () for a text the guard lets through.

    One pass splits the lowered text into words; only the rules whose anchor words or marks the
    text holds (and the invisible rules, when it holds one of their characters) are searched. The
    injection rules read the text without its invisible characters, so a zero-width space inside
    "ignore" hides nothing from them.
    """
    lowered = text.lower()
    hidden = not text.isascii() and _INVISIBLE_CHARACTERS.search(text) is not None
    visible = _INVISIBLE_CHARACTERS.sub("", lowered) if hidden else lowered
    candidates: set[GuardRule] = set()
    for word in _ANCHOR_WORDS.intersection(_WORD.findall(visible)):
        candidates.update(_RULES_BY_WORD[word])
    for mark, rule in _MARKED_RULES:
        if mark in visible:
            candidates.add(rule)
    if hidden:
        candidates.update(_INVISIBLE_RULES)
    if not candidates:
        return ()
    return tuple(
        rule.name
        for rule in GUARD_RULES
        if rule in candidates and _breaks(rule, lowered if rule.kind == INVISIBLE else visible)
    )


def guard_scan_entry(*, uid: str, key: str, value: str) -> tuple[str, ...]:
    """The rules an entry's uid, key or value breaks (each reaches the model in the context block: the uid in its
    header), in GUARD_RULES order."""
    found = set(guard_scan(uid)) | set(guard_scan(key)) | set(guard_scan(value))
    return tuple(rule.name for rule in GUARD_RULES if rule.name in found)


def guard_reasons(names: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """(name, reason) of each named rule, for pages that explain a flag; a name no rule has any more keeps no reason."""
    return [(name, RULES_BY_NAME[name].reason if name in RULES_BY_NAME else "") for name in names]


def _written_out(characters: re.Pattern[str], text: str) -> str:
    """text with each of these characters written out as ⟦U+XXXX⟧ (an ASCII text holds none of them)."""
    if text.isascii():
        return text
    return characters.sub(lambda match: f"⟦U+{ord(match.group()):04X}⟧", text)


def guard_reveal(text: str) -> str:
    """text with every character an invisible rule looks for written out as ⟦U+XXXX⟧, so a reviewer reads
    what a model would (an override no longer reverses what follows it on the page)."""
    return _written_out(_INVISIBLE_CHARACTERS, text)


# In a uid or key shown as a name: the characters that reorder what follows them (overrides, embeddings, isolates,
# direction marks) or take no room at all (zero-width spaces, invisible operators, tags): "\u202eecila" shows as
# "alice". The joiners and the variation selectors are left as they are: emoji are made of them, and Persian and
# Indic names hold the zero-width non-joiner. (So "ali\u200dce" still reads as "alice", as a look-alike letter would.)
_NAME_HIDDEN_CHARACTERS = re.compile(
    f"[\u200e\u200f\u061c\u202d\u202e{_EMBEDDINGS}{_ZERO_WIDTH}{_ZERO_WIDTH_SPACE}{_TAGS}]"
)


def name_reveal(name: str) -> str:
    """A uid or key as a page shows it: each character that would reorder it (and the page's text after it) or take
    no room written out as ⟦U+XXXX⟧ ("\u202eecila" is shown so, not as "alice")."""
    return _written_out(_NAME_HIDDEN_CHARACTERS, name)


def guard_hides_characters(names: list[str]) -> bool:
    """Whether any of these rules is an invisible-character rule (its text reads differently than it shows)."""
    return any(name in RULES_BY_NAME and RULES_BY_NAME[name].kind == INVISIBLE for name in names)
