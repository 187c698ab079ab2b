"""The semantic axis: how well a node's body text answers the query text.

A scorer is any callable ``(query_text, body_text) -> float`` in [0, 1]
(:class:`SemanticScorer`). The default, :data:`token_jaccard`, is the Jaccard
index of the two texts' token sets, a token being a maximal run of ``\\w``
characters after casefolding. Embedding scorers plug in the same way.
"""

from __future__ import annotations

import re
from typing import Final, Protocol, runtime_checkable

__all__ = ["SemanticScorer", "TokenJaccard", "token_jaccard", "tokenize"]

_TOKEN: Final = re.compile(r"\w+")


def tokenize(text: str) -> frozenset[str]:
    """The set of casefolded ``\\w+`` tokens of ``text``."""
    return frozenset(_TOKEN.findall(text.casefold()))


@runtime_checkable
class SemanticScorer(Protocol):
    """Scores a node's body text against a query text, in [0, 1].

    The pipeline only calls a scorer when the query has text. A result that
    is NaN counts as 0; one outside [0, 1] is clamped into it.
    """

    def __call__(self, query_text: str, body_text: str) -> float:
        """Return the similarity of ``body_text`` to ``query_text``."""
        ...


class TokenJaccard:
    """Jaccard index of token sets: ``|Q ∩ B| / |Q ∪ B|``, 0 when both are empty.

    The vectorised engine recognises this scorer and answers it from an
    inverted index built once per snapshot, instead of tokenising every
    candidate on every query.
    """

    __slots__ = ()

    def __call__(self, query_text: str, body_text: str) -> float:
        """Return the Jaccard index of the two texts' token sets."""
        query = tokenize(query_text)
        body = tokenize(body_text)
        union = len(query | body)
        return len(query & body) / union if union else 0.0

    def __repr__(self) -> str:
        return "token_jaccard"


token_jaccard: Final = TokenJaccard()
"""The default semantic scorer."""
