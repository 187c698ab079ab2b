"""Retrieval metrics over one ranked list of node ids and a set of relevant ids.

Binary relevance. With ``R`` the relevant set and ``ranked`` the returned ids
in rank order (rank 1 first):

``recall@k``
    ``|R ∩ ranked[:k]| / min(|R|, k)``: the share of the relevant nodes that
    fit in the top ``k`` which are there. With one relevant node it is 1 when
    that node is in the top ``k``, else 0; with two relevant nodes and k = 3
    both must be there for 1 (one gives 0.5). Capping the denominator at ``k``
    keeps a perfect ranking at 1 when ``|R| > k``.
``nDCG@k``
    ``DCG / IDCG`` with ``DCG = sum over i <= k of rel_i / log2(i + 1)`` and
    ``IDCG`` the DCG of a ranking with every relevant node first.
``MRR``
    ``1 / rank`` of the first relevant node in the whole returned list; 0 when
    none was returned. (Averaged over cases it is the mean reciprocal rank.)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from cortex_agents.errors import InvalidArgument

__all__ = ["ndcg_at", "recall_at", "reciprocal_rank", "score_ranking"]


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """``|R ∩ top k| / min(|R|, k)``."""
    if not relevant:
        raise InvalidArgument("relevant", "must not be empty", relevant)
    found = len(set(ranked[:k]) & set(relevant))
    return found / min(len(relevant), k)


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain of the top ``k``, binary relevance."""
    if not relevant:
        raise InvalidArgument("relevant", "must not be empty", relevant)
    wanted = set(relevant)
    # i counts from 0, so rank i + 1 is discounted by log2(rank + 1).
    dcg = sum(1.0 / math.log2(i + 2) for i, node in enumerate(ranked[:k]) if node in wanted)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), k)))
    return dcg / ideal


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """``1 / rank`` of the first relevant node, 0 when none is ranked."""
    wanted = set(relevant)
    for i, node in enumerate(ranked):
        if node in wanted:
            return 1.0 / (i + 1)
    return 0.0


def score_ranking(ranked: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    """``{"recall@3", "ndcg@5", "mrr"}`` of one ranking."""
    return {
        "recall@3": recall_at(ranked, relevant, 3),
        "ndcg@5": ndcg_at(ranked, relevant, 5),
        "mrr": reciprocal_rank(ranked, relevant),
    }
