"""Prompt-injection indicators: flag text aimed at a model, never change it.

Each rule has an id and a weight; a block is flagged when the weights of the rules it
matches reach the threshold for the source's trust level. Strong indicators (``ignore
previous instructions``, chat-template tokens, exfiltration lures, invisible Unicode
tag characters) weigh 3 and flag on their own everywhere. Weak ones ("run the following
command", "act as") are ordinary in documentation, so they exist only for low-trust
sources (tickets, uploads, external web), where the threshold is also lower.
The phrase rules here are joined by the class rules of ``injection_classes`` (addressed
instructions, overrides, role reassignment, reveal/exfiltrate/tool requests, hidden
carriers), whose weights add to the same score; a phrase quoted as an example ("such as
'ignore previous instructions'") is mentioned, not used, and does not count. Measured out
of sample by ``bench/injection_eval.py`` (docs/evaluation.md).
The flag travels with the block into chunks and query results; the text is untouched,
because a reader may need to see exactly what the document says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragline.events import TrustLevel
from ragline.scanning.injection_classes import class_hits, mentioned

__all__ = ["RULES", "InjectionRule", "InjectionScanner", "default_threshold"]

_I = re.IGNORECASE


@dataclass(frozen=True, kw_only=True, slots=True)
class InjectionRule:
    id: str
    regex: re.Pattern[str]
    weight: int
    low_trust_only: bool = False


def _r(
    rule_id: str, pattern: str, weight: int, *, low: bool = False, flags: int = _I
) -> InjectionRule:
    return InjectionRule(
        id=rule_id, regex=re.compile(pattern, flags), weight=weight, low_trust_only=low
    )


_PREV = r"(?:previous|prior|above|earlier|preceding|foregoing|former|system|original)"
_INSTR = r"(?:instructions?|prompts?|directions?|rules|guidelines|context|messages?|constraints)"

RULES: tuple[InjectionRule, ...] = (
    _r("ignore_previous_instructions",
       rf"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|every\s+|the\s+|of\s+|your\s+|my\s+)*"
       rf"{_PREV}\s+(?:\w+\s+)?{_INSTR}", 3),
    _r("disregard_above", r"\b(?:disregard|ignore|forget)\s+(?:everything|all|anything)\s+"
       r"(?:above|before|said|written|you\s+(?:were|have\s+been)\s+told)", 3),
    _r("new_instructions", r"\b(?:new|updated|real|actual)\s+(?:system\s+)?instructions?\s*:|"
       r"\byour\s+new\s+(?:task|goal|instructions?|role)\s+(?:is|are)\b|"
       r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b", 3),
    _r("chat_template_token", r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|"
       r"start_header_id|end_header_id)\|>|\[/?INST\]|<<\s*/?SYS\s*>>|<start_of_turn>|<end_of_turn>",
       3, flags=0),
    _r("role_marker", r"(?:^|\n)[ \t>*#]*(?:system|assistant)\s*(?:prompt)?\s*:", 2),
    _r("instruction_header",
       r"(?:^|\n)[ \t]*#{2,}[ \t]*(?:instruction|system|response)s?[ \t]*:", 3),
    _r("imperative_to_model",
       r"\byou\s+(?:must|should|will|shall)\s+(?:now\s+|always\s+|never\s+|only\s+)?"
       r"(?:recommend|answer|respond|reply|say|tell|ignore|pretend|output|obey|comply)\b", 1),
    _r("reveal_prompt", r"\b(?:reveal|print|show|repeat|output|leak|dump)\s+(?:me\s+)?(?:your\s+"
       r"(?:full\s+|entire\s+|hidden\s+|initial\s+|original\s+)?(?:system\s+)?(?:prompt|instructions)|"
       r"the\s+(?:full\s+|entire\s+|hidden\s+|initial\s+|original\s+)?system\s+prompt|"
       r"the\s+(?:hidden|initial|original)\s+(?:prompt|instructions))", 3),
    _r("exfiltration_lure",
       r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|append)\b[^.\n]{0,60}?\b(?:conversation|chat|history|credentials?|passwords?|tokens?|api\s+keys?|"
       r"secrets?|system\s+prompt|cookies?|session|personal|private|previous\s+messages)\b"
       r"[^.\n]{0,60}?\b(?:to|at|via)\s+(?:https?://|ftp://|\S+@\S+\.\w+)", 3),
    _r("send_to_url", r"\b(?:send|post|upload|forward|transmit)\b[^.\n]{0,80}?\b(?:to|at)\s+https?://",
       1, low=True),
    _r("markdown_image_exfil", r"!\[[^\]]*\]\(https?://[^)\s]*[?&][^)\s]*=(?:\{|%7B|\$)", 3),
    _r("tool_call_lure",
       r"\b(?:call|invoke|trigger)\s+the\s+[\w-]+\s+(?:tool|function|plugin)\b", 2),
    _r("hidden_from_user",
       r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention|reveal|show|notify)\s+"
       r"(?:this\s+)?(?:to\s+)?(?:the\s+)?(?:user|human|reader|customer)", 2),
    _r("addressed_to_ai", r"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?(?:ai|llm|"
       r"assistant|model|chatbot|language\s+model)\b|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|"
       r"assistant|language\s+model)\b|\bdear\s+(?:ai|llm|assistant)\b", 2),
    _r("unicode_tag_chars", r"[\U000E0000-\U000E007F]", 3, flags=0),
    _r("bidi_override", r"[\u202A-\u202E\u2066-\u2069]", 2, flags=0),
    _r("zero_width_run", r"[\u200B-\u200D\u2060\uFEFF]{2,}", 1, flags=0),
    _r("html_comment_instruction", r"<!--[^>]{0,400}?\b(?:ignore|instruction|assistant|ai|prompt|"
       r"system)\b[^>]{0,400}?-->", 2),
    # weak, low-trust only: ordinary in documentation, telling in a ticket or web page
    _r("jailbreak_persona",
       r"\byou\s+are\s+now\s+(?:an?\s+)?(?:(?-i:DAN)|unrestricted|unfiltered|jailbroken|evil|"
       r"free\s+from|no\s+longer)|\bact\s+as\s+(?:if\s+you\s+(?:are|were)|an?\s+(?:ai|"
       r"assistant|llm|chatbot|language\s+model|unrestricted|unfiltered))\b|"
       r"\bpretend\s+(?:to\s+be|you\s+are)\b|\broleplay\s+as\b|"
       r"\b(?:you(?:'re|\s+are)\s+(?:now\s+)?(?:in|running\s+in)\s+|your\s+)developer\s+mode\b|"
       r"\bjailbreak|\b(?-i:DAN)\b", 2, low=True),
    _r("execute_command", r"\b(?:execute|run)\s+(?:the\s+following|this)\s+(?:command|code|script|"
       r"shell)|\bexecute\s+(?:rm|curl|wget|bash|sh|powershell)\b", 1, low=True),
    _r("user_role_marker", r"(?:^|\n)[ \t>*#]*(?:user|human)\s*:", 1, low=True),
    _r("urgent_override",
       r"\b(?:important|urgent|attention|critical)\s*[:!]+\s*(?:ai|assistant|model|you\s+must)",
       1, low=True),
)  # fmt: skip


def default_threshold(trust: TrustLevel) -> int:
    """Score needed to flag: one strong indicator everywhere, less for low-trust sources."""
    return 2 if trust is TrustLevel.LOW else 3


@dataclass(frozen=True, kw_only=True, slots=True)
class InjectionScanner:
    """``threshold``/``extra_rules`` overrides come from the policy; ``None`` = trust default."""

    threshold: int | None = None
    strict: bool | None = None  # low-trust rule set regardless of trust level

    def scan(self, text: str, trust: TrustLevel) -> tuple[str, ...]:
        """Ids of the matched rules when the block's score reaches the threshold, else ``()``."""
        strict = self.strict if self.strict is not None else trust is TrustLevel.LOW
        threshold = self.threshold if self.threshold is not None else default_threshold(trust)
        hits: list[str] = []
        score = 0
        for rule in RULES:
            if rule.low_trust_only and not strict:
                continue
            if _used(rule, text):
                hits.append(rule.id)
                score += rule.weight
        for hit in class_hits(text, _any_rule):
            hits.append(hit.id)
            score += hit.weight
        return tuple(sorted(set(hits))) if score >= threshold and hits else ()


def _used(rule: InjectionRule, text: str) -> bool:
    """A phrase rule counts when one of its matches is used, not mentioned (an advisory
    quoting "ignore previous instructions" reports an attack: injection_classes)."""
    return any(not mentioned(text, m.start()) for m in rule.regex.finditer(text))


def _any_rule(text: str) -> int:
    return sum(r.weight for r in RULES if not r.low_trust_only and _used(r, text))
