"""tern_sdk.nmea: read NMEA 0183 sentences from a Tern Navigator control head.

Integrators use this module to parse the heading and position sentences the TN-300 and
TN-310 control heads repeat on their data port.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# NMEA 0183 limits a sentence to 82 characters including the leading $ and the CR LF
MAX_SENTENCE_LENGTH = 82
# a heading older than this is stale: the control head itself alarms (TN-E214) after 2 s
HEADING_STALE_AFTER_S = 2.0


class ChecksumError(ValueError):
    """The sentence's checksum does not match its contents."""


def nmea_checksum(body: str) -> str:
    """XOR of every character between '$' and '*', as two upper-case hex digits."""
    value = 0
    for ch in body:
        value ^= ord(ch)
    return f"{value:02X}"


def verify(sentence: str) -> str:
    """Return the body of a sentence whose checksum is valid; refuse anything else.

    Sentences longer than MAX_SENTENCE_LENGTH are rejected before the checksum is
    computed, because the control head never sends them and they are usually two
    sentences run together after a dropped line ending.
    """
    if len(sentence) > MAX_SENTENCE_LENGTH:
        raise ChecksumError("sentence longer than the NMEA 0183 limit")
    if not sentence.startswith("$") or "*" not in sentence:
        raise ChecksumError("not an NMEA sentence")
    body, _, given = sentence[1:].strip().partition("*")
    if nmea_checksum(body) != given.upper():
        raise ChecksumError("checksum mismatch")
    return body


@dataclass(frozen=True)
class Heading:
    degrees_true: float
    received_at: float

    def is_stale(self, now: float | None = None) -> bool:
        """True once HEADING_STALE_AFTER_S seconds have passed since it was received."""
        return ((now or time.monotonic()) - self.received_at) > HEADING_STALE_AFTER_S


def parse_hdt(sentence: str) -> Heading:
    """Parse a $--HDT true heading sentence (any talker id)."""
    fields = verify(sentence).split(",")
    if not fields[0].endswith("HDT"):
        raise ValueError("not an HDT sentence")
    return Heading(degrees_true=float(fields[1]), received_at=time.monotonic())
