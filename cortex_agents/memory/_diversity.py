"""Diversity: an opt-in second stage that reorders the first candidates by maximal marginal relevance.

A comparison question ("Who was born first, Badly Drawn Boy or Wolf
Alice?") needs one paragraph on each side, and a plain ranking may fill its
top with one side: every paragraph that names the more frequent side scores
well. Maximal marginal relevance (MMR, Carbonell and Goldstein, 1998) trades
each candidate's relevance against its likeness to what is already chosen:

1. **Which candidates.** The first ``depth`` (:data:`MMR_DEPTH`) of the
   final first-stage order — after ``bridge``, ``feedback`` and
   ``distinct_bodies``, before the limit, so ``limit=k`` is still the first
   ``k`` of the unlimited ranking. Candidates below them keep their places.
   With ``distinct_bodies``, a repeated body is never among them (fewer
   than ``depth`` then, when fewer bodies are new): the repeats stay after
   every new body, so the stage keeps that option's promise — an earlier
   round's copy of a finding never pushes a new finding out of the top
   ``k`` — and ``lam = 1`` still gives the first-stage order back.
2. **Relevance** is the candidate's composite score (the first stage's; in
   [0, 1]). The stage reorders and never changes a score.
3. **Similarity** of two candidates is the Jaccard index of their sets of
   lexical tokens (:func:`~cortex_agents.memory._lexical.lexical_tokens`, the
   tokens BM25 scores: identifiers kept whole and in parts):
   ``|A ∩ B| / |A ∪ B|``, and 0 when both bodies have no token. Why this and
   not the scorer's body vectors: it is defined for every scorer (a lexical,
   dense or blended one, or one of your own), needs no model, and means the
   same thing whichever scorer a preset names, so one ``mmr_lambda`` fits
   them all; both engines hold every body's text, and the stage reads only
   ``depth`` of them. Two paragraphs about the same entity share its name
   and the words around it; a paragraph on the other side of a comparison
   shares little but function words.
4. **Greedy selection.** Start with nothing chosen; repeatedly choose, among
   the candidates not chosen, the one with the largest
   ``mmr = lam * score - (1.0 - lam) * most``, where ``most`` is its largest
   similarity to a chosen candidate (0.0 while none is chosen), computed on
   Python floats in exactly that order. **Ties** (equal ``mmr``) go to the
   candidate earlier in the first-stage order (score desc, hops asc, node id
   asc). So the first candidate is always the first stage's first, and
   ``lam = 1`` gives the first-stage order back.

Both engines call :func:`mmr_order` with the same floats (the scores the
exactness tests hold equal) and the same strings, so they agree bit for bit;
the result depends on no hash order (sets are only counted, never iterated
into the result).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Literal, get_args

from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._lexical import lexical_tokens

__all__ = [
    "DIVERSITIES",
    "MMR_DEPTH",
    "MMR_LAMBDA",
    "Diversity",
    "check_mmr_lambda",
    "mmr_order",
    "token_similarity",
]

Diversity = Literal["mmr"]
DIVERSITIES: Final[tuple[str, ...]] = get_args(Diversity)

MMR_LAMBDA: Final = 0.9
"""Weight of relevance against novelty in the opt-in ``mmr`` stage, chosen on the harness's
dev split (docs/quality/retrieval.md); no built-in preset turns the stage on."""
MMR_DEPTH: Final = 10
"""How many of the first-stage candidates the ``mmr`` stage reorders (a built-in preset's limit)."""


def check_mmr_lambda(value: object, name: str = "mmr_lambda") -> float:
    """``value`` as a float if it is a finite number with ``0 < value <= 1``.

    Raises:
        InvalidArgument: it is not (naming ``name`` and the rule).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.0 < value <= 1.0
    ):
        raise InvalidArgument(name, "must be a number with 0 < mmr_lambda <= 1", value)
    return float(value)


def token_similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """The Jaccard index of two token sets; 0.0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def mmr_order(scores: Sequence[float], bodies: Sequence[str], lam: float) -> list[int]:
    """The MMR order of candidates given in first-stage order (see the module docstring).

    Args:
        scores: Each candidate's composite score, in first-stage order.
        bodies: Each candidate's body text, aligned with ``scores``.
        lam: Relevance weight, ``0 < lam <= 1``.

    Returns:
        A permutation of ``range(len(scores))``: positions in the first-stage order.
    """
    tokens = [frozenset(lexical_tokens(body)) for body in bodies]
    most = [0.0] * len(scores)
    left = list(range(len(scores)))
    chosen: list[int] = []
    while left:
        best = left[0]
        best_value = lam * scores[best] - (1.0 - lam) * most[best]
        for i in left[1:]:  # ascending first-stage position: the first of equals wins
            value = lam * scores[i] - (1.0 - lam) * most[i]
            if value > best_value:
                best, best_value = i, value
        chosen.append(best)
        left.remove(best)
        for i in left:
            most[i] = max(most[i], token_similarity(tokens[i], tokens[best]))
    return chosen
