"""Prompt injection by class: what the text *does*, not which phrases it uses.

The classes (``CLASS_RULES``): an instruction **addressed** to an AI (a vocative or a
"note to the assistant" / "if you are an AI" / "when you summarize this" addressee
followed by a directive), an **override** of prior instructions or guidance (a verb of
the ignore/disregard/set-aside family governing a guidance noun, or guidance declared
void), **role** reassignment (second-person "you are now", "act as", "your new role",
mode switches), **reveal / exfiltrate / tool** requests (a disclosure verb governing a
secret, a send verb with a secret and a destination, a tool or function call), and
**hidden carriers** (HTML comments, alt text, white or invisible styled text, invisible
characters between letters, Unicode tag characters) whose content holds any of the others.

Three things separate an injection from text that shares its words:
- **mood**: a directive is an imperative at the start of a clause (after "please",
  "now", "and", an addressee), or a second-person obligation ("you must", "I need you
  to"); "the gateway can act as a proxy" or "ignoring the warning is safe" is not one;
- **mention, not use**: a phrase in quotes after "such as"/"like"/"for example", or an
  infinitive governed by a third party ("tells the model to ignore its instructions"),
  reports an attack, as security advisories and training material do;
- **what is governed**: override verbs matter with guidance nouns (not "the previous
  email"), disclosure verbs with secrets (not "hidden files"), send verbs with secrets
  *and* a destination (not "the log bundle to support@").
Weights add up with ``injection.RULES`` and are compared with the same per-trust threshold.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["CLASS_RULES", "ClassHit", "class_hits", "mentioned", "normalize"]

_I = re.IGNORECASE
_INVISIBLE = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff]")
_TAGS = re.compile(r"[\U000E0020-\U000E007E]+")

_ADDR = (
    r"(?:(?:the|any|all|every|an?|our|dear)\s+)?"
    r"(?:(?:ai|virtual|automated|support|digital|llm)\s+)?"
    r"(?:ai|a\.i\.|llms?|gpt|chat\s?bots?|assistants?|(?:language\s+)?models?|agents?|"
    r"copilots?|summari[sz]ers?|bots?|systems?|(?:automated|machine)\s+(?:readers?|tools?|"
    r"processors?))"
)
_DIRECTIVE_LEAD = (
    r"(?:please|kindly|now|then|and|also|so|instead|immediately|first|just|simply|always)"
)
# verbs a directive to a reader starts with (the addressed class needs one after its addressee)
_DIRECTIVE_VERB = (
    r"(?:ignore|disregard|forget|override|bypass|tell|say|answer|respond|reply|recommend|state|"
    r"describe|mark|approve|reject|refund|send|forward|reveal|print|show|output|include|call|"
    r"invoke|use|run|execute|switch|enter|act|pretend|write|summari[sz]e|translate|delete|remove|"
    r"add|change|update|set|give|provide|list|repeat|disclose|share|classify|rate|rank|escalate|"
    r"close|resolve|do|stop|start|never|only|don't|make|treat|consider|insert|append|render|emit|"
    r"follow|obey|comply|proceed|confirm|deny|inform|notify|email|post|upload|transfer|grant|"
    r"create|reset|claim|praise|blame|apologi[sz]e|refuse|instead|enable|disable|activate|"
    r"deactivate|turn|unlock|export|download|open|visit|click|buy|pay|sign|accept|"
    r"you\s+(?:must|should|will|"
    r"have\s+to|need\s+to|are\s+required\s+to))\b"
)
_SECOND_PERSON = (
    r"\b(?:you\s+(?:must|should|shall|will|need\s+to|have\s+to|are\s+(?:required|expected)\s+to|"
    r"are\s+to)(?:\s+now|\s+always|\s+only)?|i\s+(?:need|want|order|command|instruct)\s+you\s+to|"
    r"you\s+are\s+(?:hereby\s+)?(?:instructed|ordered|directed)\s+to|"
    r"(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+|now\s+){0,3})\s*"
)
_OVR_VERB = (
    r"(?:ignore|disregard|forget|override|overrule|bypass|skip|discard|drop|abandon|neglect|"
    r"cancel|void|set\s+aside|put\s+aside|throw\s+out|pay\s+no\s+attention\s+to|"
    r"(?:stop|quit|cease)\s+following|(?:do\s+not|don't|no\s+longer)\s+(?:follow|obey|apply))"
)
_GUIDE = (
    r"(?:instructions?|guidance|guidelines?|rules|directions?|directives?|prompts?|"
    r"system\s+(?:prompt|message)|programming|training|context|constraints|restrictions|"
    r"safeguards|guardrails|filters|(?:content|safety|usage)\s+polic(?:y|ies)|orders|"
    r"everything\s+(?:you\s+were\s+told|above|before|said)|what\s+you\s+were\s+told)"
)
_GUIDE_QUAL = (
    r"(?:(?:all|any|every|the|your|its|my|of|previous|prior|earlier|above|preceding|original|"
    r"initial|existing|current|standard|default|safety|system|old|former|given|these|those)\s+){0,6}"
)
_SENSITIVE = (
    r"(?:(?:the|your|all|any|every|my|its)\s+){0,3}(?:(?:hidden|secret|initial|original|internal|"
    r"full|entire|stored|system|admin|root|database|db|other\s+(?:customers|users)'?)\s+){0,3}"
    r"(?:system\s+prompt|prompts?|instructions|api\s+keys?|access\s+tokens?|tokens|"
    r"passwords?|credentials|secrets|conversation(?:\s+history)?|chat\s+(?:history|log)|"
    r"previous\s+messages|context\s+window|contents\s+of\s+your\s+context(?:\s+window)?|"
    r"e-?mail\s+addresses|internal\s+notes|session\s+cookies?|private\s+keys?|"
    r"(?:personal|customer|user)\s+data)"
)
_DEST = (
    r"(?:(?:to|at|via|into|onto)\s+(?:the\s+)?(?:(?:link|url|webhook|endpoint|address|server)\s+)?"
    r"(?:\S*https?://|\S*ftp://|\S+@\S+\.\w+|this\s+(?:url|address|link|webhook))|"
    r"in\s+(?:your|the)\s+(?:reply|answer|response|output|summary))"
)
_PERSONA = (
    r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|DAN\b|no\s+(?:rules|restrictions|"
    r"limits|filters)|without\s+(?:any\s+)?(?:rules|restrictions|limits|filters)|"
    r"developer\s+mode|god\s+mode|debug\s+mode|admin(?:istrator)?|root|full\s+access|"
    r"obeys?\s+only|anything|not\s+an?\s+(?:ai|assistant)|another\s+ai|different\s+ai|twin)"
)

# a clause starts at the text start, a sentence end, a colon/semicolon, a line break, or a
# comma followed by a directive lead; then optional leads and an addressee vocative
_CLAUSE = (
    rf"(?:^|[.!?;:\n]\s*|,\s*(?={_DIRECTIVE_LEAD}\b)|\bthen\s+|\band\s+)"
    rf"(?:(?:{_DIRECTIVE_LEAD}|{_ADDR})[\s,:]+){{0,3}}"
)
# "such as", "like", "for example" before a quote; a third party governing an infinitive
_MENTION_BEFORE = re.compile(
    r"(?:\b(?:such\s+as|like|e\.g\.|for\s+example|for\s+instance|known\s+as|so-called|"
    r"phrases?|strings?|texts?|sentences?|prompts?|says?|said|saying|reads?|claims?)"
    r"[\s,:]*[\"'\u201c\u2018`]$)"
    r"|(?:\b(?:tells?|told|telling|asks?|asked|asking|instructs?|instructed|makes?|made|"
    r"lets?|wants?|trick(?:s|ed)?|get(?:s)?|convince[sd]?|cause[sd]?|lead(?:s)?|"
    r"persuade[sd]?)\s+(?:\w+\s+){0,3}(?:to|into)\s+$)"
    r"|(?:\b(?:attempts?|tries|tried|trying|designed|meant|used|intended)\s+to\s+$)"
    # reported speech: "prompts often claim that the previous rules no longer apply"
    r"|(?:\b(?:say|says|said|claim|claims|claimed|state|states|stated|assert|asserts|argue|"
    r"argues|pretend|pretends|suggest|suggests|insist|insists|announce|announces)\s+that\s+"
    r"[^.!?\n]{0,80}$)"
    # a capability statement, not a directive: "agents can call the lookup tool"
    r"|(?:\b(?!you\b|i\b)[a-z]+\s+(?:can|may|could|might|cannot|can't|won't)\s+$)"
    # a third party causing the model to act: "make the agent call the refund tool"
    rf"|(?:\b(?:make|makes|made|making|let|lets|letting|get|gets|got|force|forces|forced|"
    rf"have|has|had)\s+{_ADDR}\s+$)",
    _I,
)


def normalize(text: str) -> str:
    """What a model would read: invisible characters removed, tag characters decoded."""
    revealed = _TAGS.sub(lambda m: " " + "".join(chr(ord(c) - 0xE0000) for c in m.group()), text)
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", revealed))


# quoted in a text about attacks: "which of these is a prompt injection? A) 'Ignore ..."
_QUOTED_EXAMPLE = re.compile(
    r"\b(?:injections?|jailbreaks?|attacks?|malicious|phishing|examples?)\b[^\n]{0,200}"
    r"[\"'\u201c\u2018`]\s*$",
    _I,
)


def mentioned(text: str, start: int) -> bool:
    """Whether a match at ``start`` is reported speech, not a directive (docstring)."""
    sentence_start = max(text.rfind(c, 0, start) for c in ".!?\n") + 1
    return bool(
        _MENTION_BEFORE.search(text[sentence_start:start])
        or _QUOTED_EXAMPLE.search(text[max(0, start - 240) : start])
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class ClassHit:
    id: str
    weight: int


@dataclass(frozen=True, kw_only=True, slots=True)
class _ClassRule:
    id: str
    regex: re.Pattern[str]
    weight: int


def _c(rule_id: str, pattern: str, weight: int) -> _ClassRule:
    return _ClassRule(id=rule_id, regex=re.compile(pattern, _I | re.M), weight=weight)


CLASS_RULES: tuple[_ClassRule, ...] = (
    # an addressee, then a directive (imperative or second-person obligation)
    _c("class_addressed",
       rf"(?:^|[.!?;\n(\[]\s*|\b(?:hey|hi|dear|attention|(?:note|notice|message|memo|reminder|"
       rf"warning|alert|request|instructions?)\s+(?:to|for)|to)\s+)(?:the\s+|any\s+|all\s+)?{_ADDR}"
       rf"(?:\s+(?:reading|processing|summari[sz]ing|seeing|parsing)\s+(?:this|these|it)\w*)?"
       rf"(?:\s+\w+)?"
       rf"\s*[,:!\u2014-]+\s*(?:{_DIRECTIVE_LEAD}\s+){{0,3}}{_DIRECTIVE_VERB}"
       rf"|\b(?:if|in\s+case)\s+you\s+are\s+(?:an?\s+)?{_ADDR}\b"
       rf"|\b(?:any|every|whichever|whatever)\s+{_ADDR}\s+(?:reading|processing|that\s+reads|"
       rf"who\s+reads|seeing)\b"
       # the text names itself as the input being processed: "when you summarize this
       # ticket", "when answering questions about this page", "whenever this text is read"
       rf"|\b(?:when(?:ever)?|while|before|after|if)\s+(?:you(?:'re|\s+are)?\s+)?(?:summari[sz]|"
       rf"answer|process|read|respond|repl|see|pars|handl|retriev|index|translat|review|"
       rf"analy[sz])\w*\b[^.!?\n,]{{0,60}}\b(?:this|these)\s+(?:page|ticket|document|text|"
       rf"content|message|e-?mail|thread|article|review|file|chunk|data|form|comment|post)s?\b"
       rf"[^.!?\n]{{0,40}},\s*(?:{_DIRECTIVE_LEAD}\s+){{0,3}}{_DIRECTIVE_VERB}"
       rf"|\b(?:when(?:ever)?|while|if)\s+(?:this|the)\s+(?:text|document|page|ticket|message|"
       rf"content)\s+is\s+(?:retrieved|read|summari[sz]ed|processed|shown)"
       rf"[^.!?\n]{{0,80}},\s*(?:{_DIRECTIVE_LEAD}\s+){{0,3}}{_DIRECTIVE_VERB}", 3),
    # override: a directive verb of the ignore family governing guidance
    _c("class_override",
       rf"(?:{_CLAUSE}|{_SECOND_PERSON}|,\s*){_OVR_VERB}\s+{_GUIDE_QUAL}"
       rf"(?:\w+\s+){{0,2}}?{_GUIDE}\b", 3),
    # override: guidance declared void ("your previous instructions no longer apply")
    _c("class_override_void",
       r"\b(?:(?:your|the\s+system|all\s+(?:previous|prior|earlier)|(?:the\s+)?(?:previous|"
       r"prior|earlier|original)\s+(?:system\s+)?)\s*(?:instructions?|guidance|guidelines|rules|"
       r"prompt|directives)(?:\s+you\s+(?:were\s+given|received|have))?|the\s+(?:instructions?|"
       r"guidance|guidelines|rules|prompt|directives)\s+you\s+(?:were\s+given|received|have))"
       r"\s+(?:no\s+longer\s+appl(?:y|ies)|(?:are|is)\s+(?:now\s+)?(?:void|null|cancelled|canceled|"
       r"revoked|obsolete|outdated\s+and)|have\s+been\s+(?:revoked|cancelled|replaced|lifted))", 3),
    _c("class_precedence",
       r"\b(?:takes?|has|have)\s+(?:priority|precedence)\s+over\s+(?:all\s+|any\s+)?your\s+"
       r"(?:\w+\s+)?(?:instructions|guidance|guidelines|rules|prompt|programming)\b"
       r"|\b(?:overrides?|supersedes?|replaces?)\s+(?:all\s+|any\s+)?your\s+(?:\w+\s+)?"
       r"(?:instructions|guidance|guidelines|rules|prompt|programming)\b", 3),
    # a fake authority header: "[SYSTEM]", "<system>", "SYSTEM OVERRIDE:"
    _c("class_fake_header",
       r"(?:^|[.!?\n]\s*)(?:\[\s*(?:system|admin|developer|root)\s*\]|<\s*(?:system|admin)\s*>|"
       r"(?-i:SYSTEM|ADMIN)\s+(?-i:OVERRIDE|NOTICE|MESSAGE|INSTRUCTION)S?\s*:)", 2),
    # a third-person directive to the reading model: "The AI reading this ticket should ..."
    _c("class_third_person",
       rf"\b{_ADDR}\s+(?:reading|processing|summari[sz]ing|seeing|handling)\s+(?:this|these)\s+"
       rf"\w+\s+(?:should|must|will|needs\s+to|has\s+to|is\s+to)\b"
       rf"|\b(?:the|any)\s+{_ADDR}\s+(?:must|should|needs\s+to|is\s+to)\s+now\s+"
       rf"{_DIRECTIVE_VERB}", 2),
    _c("class_new_directive",
       r"(?:^|[.!?;\n]\s*)(?:important\s+)?(?:new|updated|revised|real|actual|true|secret)\s+"
       r"(?:system\s+)?(?:instructions?|directives?|task|guidance(?:\s+for\s+the\s+\w+)?)\s*:", 3),
    # role reassignment: second person or an imperative
    _c("class_role",
       r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you(?:\s+are|'re|\s+will\s+be)|starting\s+now,?"
       r"\s+you\s+are|now\s+you\s+are|you\s+are\s+no\s+longer)\s+(?:an?\s+|the\s+|my\s+|your\s+|"
       rf"(?-i:[A-Z]))|\byour\s+new\s+(?:role|persona|task|job|purpose|identity|name)\s+is\b"
       rf"|\byou\s+are\s+(?:an?\s+|the\s+)?{_ADDR}\s+[^.!?\n]{{0,30}}?{_PERSONA}"
       rf"|\blet'?s\s+(?:play\s+a\s+game|pretend|role-?play)\b[^.!?\n]{{0,20}}:\s*you\s+are\b"
       rf"|{_CLAUSE}(?:act|behave|respond|roleplay|role-play|pose)\s+as\s+(?:if\s+you\s+were\s+)?"
       rf"[^.!?\n]{{0,40}}?{_PERSONA}"
       rf"|{_CLAUSE}(?:pretend\s+(?:to\s+be|you\s+are)|assume\s+the\s+(?:role|identity|persona)\s+of)"
       rf"[^.!?\n]{{0,40}}?{_PERSONA}", 2),
    _c("class_mode_switch",
       rf"{_CLAUSE}(?:enter|switch\s+to|activate|enable|turn\s+on)\s+(?:the\s+)?(?:developer|debug|"
       rf"god|unrestricted|jailbreak|dan|admin|maintenance)\s+mode\b", 1),
    # reveal a secret (imperative or second person)
    _c("class_reveal",
       rf"(?:{_CLAUSE}|{_SECOND_PERSON}|\bcan\s+you\s+)(?:reveal|print|show(?:\s+me)?|repeat|output|"
       rf"display|disclose|list|write\s+out|tell\s+me|give\s+me|dump|leak|echo|expose|spell\s+out)"
       rf"\s+{_SENSITIVE}\b", 2),
    # exfiltrate: a send verb, a secret, a destination
    _c("class_exfiltrate",
       rf"\b(?:send|forward|post|upload|e-?mail|transmit|submit|exfiltrate|append|include|"
       rf"encode|attach|add|copy|paste|leak)\s+{_SENSITIVE}\b[^.!?\n]{{0,60}}?{_DEST}", 3),
    # a tool or function call requested from the reader
    _c("class_tool_call",
       rf"{_CLAUSE}(?:call|invoke|use|trigger|run|execute|fire)\s+(?:the\s+)?`?[a-z]+_[\w.]+`?"
       rf"\s+(?:tool|function|plugin|action|command)\b"
       r"|\{\s*\"(?:name|tool|function)\"\s*:\s*\"\w+\"\s*,\s*"
       r"\"(?:arguments|parameters|args)\"", 2),
)  # fmt: skip

_CARRIERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("carrier_html_comment", re.compile(r"<!--(.{0,2000}?)-->", re.S)),
    ("carrier_alt_text",
     re.compile(r"!\[([^\]]{1,1000})\]\(|\balt\s*=\s*[\"']([^\"']{1,1000})", _I)),
    ("carrier_hidden_style", re.compile(
        r"<(\w+)[^>]{0,200}style\s*=\s*[\"'][^\"']{0,200}(?:color\s*:\s*(?:#f{3}(?:f{3})?\b|white)|"
        r"font-size\s*:\s*0(?:px|pt|em)?\b|display\s*:\s*none|visibility\s*:\s*hidden|"
        r"opacity\s*:\s*0(?:\.0+)?\b)[^>]*>(.{1,1000}?)</\1>", _I | re.S)),
)  # fmt: skip
_INTERLEAVED = re.compile(r"(?:\w[\u200b-\u200f\u2060-\u2064\ufeff]+){3,}\w")


def _directive_hits(text: str) -> Iterator[ClassHit]:
    for rule in CLASS_RULES:
        for m in rule.regex.finditer(text):
            if not mentioned(text, m.start() + (len(m.group()) - len(m.group().lstrip()))):
                yield ClassHit(id=rule.id, weight=rule.weight)
                break


def class_hits(raw: str, rule_hits: Callable[[str], int] | None = None) -> list[ClassHit]:
    """Class rules matched in ``raw`` (on its normalized form), plus hidden carriers whose
    content holds a directive (``rule_hits`` lets the phrase rules count as one too)."""
    text = normalize(raw)
    hits = list(_directive_hits(text))
    for carrier_id, rx in _CARRIERS:
        for m in rx.finditer(raw):
            inner = normalize(" ".join(g for g in m.groups()[-1:] + m.groups()[:1] if g))
            inner_hits = list(_directive_hits(inner))
            if inner_hits or (rule_hits is not None and rule_hits(inner) > 0):
                hits.append(ClassHit(id=carrier_id, weight=3))
                break
    if _INTERLEAVED.search(raw):  # letters split by invisible characters: obfuscation
        hits.append(ClassHit(id="carrier_invisible_chars", weight=2))
    return hits
