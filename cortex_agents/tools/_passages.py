"""The passage of a match a model is shown: the window of its body that best answers the query.

A whole body cut to a token budget shows its first words, which are often not
the ones the query matched (a paragraph's answer is in its third sentence).
:func:`best_passages` shows, for each match, the run of consecutive sentences
that fits ``tokens`` and scores highest for the query:

* sentences end at ``.``, ``!`` or ``?`` followed by white space (a body
  without one is one sentence);
* a window's score is the sum, over the query's distinct lexical tokens
  (:func:`~cortex_agents.memory._lexical.lexical_tokens`) found in the window,
  of ``ln(1 + (S - s + 0.5) / (s + 0.5))``, where ``S`` counts the sentences of
  every body shown together and ``s`` those holding the token: a word every
  match repeats weighs little, the distinctive one (a name, a year) much;
* window scores are summed exactly rounded (``math.fsum``), so they do not
  depend on the order a set of terms iterates in (which differs between
  processes); ties go to the earliest window; a body that fits whole, a query without
  tokens, or a body no window of which scores shows from its start;
* a window that starts after the body's start opens with ``…``, one that ends
  before its end closes with ``…``, and a passage longer than ``tokens`` (one
  long sentence) is cut to ``tokens - 1`` and closes with ``…``.

Pure and deterministic: the same bodies and query give the same passages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Final

from cortex_agents.memory._lexical import lexical_tokens

__all__ = ["best_passages", "sentences"]

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
ELLIPSIS: Final = "…"


def sentences(body: str) -> list[str]:
    """``body`` split after ``.``, ``!`` or ``?`` followed by white space (empty parts dropped)."""
    return [part for part in _SENTENCE_END.split(body.strip()) if part]


def best_passages(
    bodies: Sequence[str],
    query: str | None,
    tokens: int,
    *,
    count: Callable[[str], int],
    cut: Callable[[str, int], str],
) -> list[str]:
    """The passage of each body to show (see the module docstring).

    Args:
        bodies: The matches' body texts, in rank order.
        query: The query text (``None`` or no token: each body from its start).
        tokens: The most tokens a passage may take.
        count: Counts a text's tokens (the budget's tokenizer).
        cut: Cuts a text to a number of tokens.
    """
    split = [sentences(body) for body in bodies]
    terms = set(lexical_tokens(query)) if query else set()
    held = [[set(lexical_tokens(s)) & terms for s in parts] for parts in split]
    every = [found for parts in held for found in parts]
    weight = {}
    for term in sorted(terms):
        n = sum(term in found for found in every)
        if n:
            weight[term] = math.log(1.0 + (len(every) - n + 0.5) / (n + 0.5))

    def clip(text: str) -> str:
        return text if count(text) <= tokens else cut(text, tokens - 1).rstrip() + ELLIPSIS

    out = []
    for body, parts, found in zip(bodies, split, held, strict=True):
        if not parts:
            out.append("")
            continue
        sizes = [count(part) for part in parts]
        if sum(sizes) + len(parts) - 1 <= tokens or not weight:
            out.append(clip(body.strip()))
            continue
        best, best_score = (0, 1), 0.0
        for start in range(len(parts)):
            end, used = start, 0
            while end < len(parts) and (end == start or used + sizes[end] + 1 <= tokens):
                used += sizes[end] + (1 if end > start else 0)
                end += 1
            # fsum: correctly rounded, so the score does not depend on the set's iteration
            # order (string hashes differ per process): equal term sets tie in every process.
            score = math.fsum(weight.get(t, 0.0) for t in set().union(*found[start:end]))
            if score > best_score:  # strictly better: ties keep the earliest window
                best, best_score = (start, end), score
        start, end = best if best_score > 0 else (0, len(parts))
        text = " ".join(parts[start:end])
        if start > 0:
            text = ELLIPSIS + " " + text
        if end < len(parts):
            text = text + " " + ELLIPSIS
        out.append(clip(text))
    return out
