"""Feedback: a second retrieval pass that reads what the first pass found.

A multi-hop question's later hops often share no word with the question:
"What currency predated the Euro in the country Signmark is from?" needs the
paragraph on the Finnish markka, which only the first hop's answer (Finland,
named in Signmark's paragraph) connects to. The ``bridge`` signal
(:mod:`cortex_agents.memory._entities`) reaches a later hop only when the best
match's text names that hop's evidence (its title) as a whole run of words;
"Finland's national qualifications" does not name ``Finnish markka``, and a
hop whose title is shared by several paragraphs ("Caribbean Community") is no
better than its namesakes. Feedback reads the best match's *text* instead,
and scores every candidate's *text* against it (pseudo-relevance feedback,
Rocchio-style, with no model at query time):

1. **Pass 1** is the ranking as the other signals leave it (after ``bridge``).
2. **The feedback query** (:func:`feedback_text`) is made of two parts:
   the *new words* — the salient words of the bodies of pass 1's first
   ``feedback_depth`` candidates, in rank order: each capitalised word or
   number (``[A-Z]\\S*`` or ``\\d\\S*`` after a non-word character — a
   title-cased span's words, a year, a code), except the first word of a
   sentence (a capital there says nothing) and a word of one character,
   without the question's own words — and the *unanswered words*: the
   question's words that none of those bodies holds (what the later hops
   must answer). Each is a casefolded ``\\w+`` run, once, in order of first
   occurrence (new words first), joined by spaces. This is Rocchio's
   expansion with the question reduced to what pass 1 left open: "Finland",
   "Eurovision" and "currency", "predated", "euro" for Signmark.
3. **Pass 2** scores every candidate's body against the feedback query with
   :data:`FEEDBACK_SCORER` (Okapi BM25 over the candidates' statistics,
   :mod:`cortex_agents.memory._lexical`): rare words weigh most, and a body
   holding both a new word and an unanswered one scores highest.
4. **Fusion**: each candidate's semantic axis gains ``feedback`` times its
   pass-2 axis, capped at 1 (as the other signals add), the composite score
   is recomputed, and the candidates are ranked again by (score desc, hops
   asc, node id asc) — the tie order of every ranking. Every candidate
   gains, pass 1's first ones included, so the pass moves up the hops that
   share the first hop's entities and the question's open words without
   moving the first hop down (or an earlier round's copy of it up).

An empty feedback query (no new word and every question word answered)
changes nothing. Both engines compute the same floats: the text is a pure
function of strings, and pass 2 is the BM25 axis the engines already agree
on to the last bit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from cortex_agents.memory._entities import words
from cortex_agents.memory._lexical import BM25

__all__ = ["FEEDBACK_SCORER", "feedback_text"]

FEEDBACK_SCORER: Final = BM25()
"""How pass 2 scores a body against the feedback text: BM25, statistics of the candidates."""

_SALIENT: Final = re.compile(r"(?<!\w)(?:[A-Z]|\d)\S*")
_SENTENCE_START: Final = re.compile(r"(?:\A|[.!?][\"')\]]*\s+)(?=\S)")


def _salient_words(body: str) -> list[str]:
    starts = {m.end() for m in _SENTENCE_START.finditer(body)}
    return [
        word
        for span in _SALIENT.finditer(body)
        if span.start() not in starts
        for word in words(span.group())
        if len(word) > 1
    ]


def feedback_text(query_text: str, bodies: Iterable[str]) -> str:
    """The feedback query of pass 1's first ``bodies`` (in rank order) for ``query_text``.

    The new words of the bodies, then the question's unanswered words (see
    the module docstring), each once, joined by spaces; ``""`` when there are none.
    """
    asked = list(dict.fromkeys(words(query_text)))
    known = set(asked)
    seen: set[str] = set()
    new: dict[str, None] = {}
    for body in bodies:
        seen.update(words(body))
        for word in _salient_words(body):
            if word not in known:
                new.setdefault(word)
    return " ".join([*new, *(word for word in asked if word not in seen)])
