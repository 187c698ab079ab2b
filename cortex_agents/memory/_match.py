"""One ranked result of a memory query, with its per-axis breakdown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cortex_agents.substrate._records import NodeId, NodeStatus

__all__ = ["Match", "Ranking"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """A candidate node, scored.

    Attributes:
        node_id: The node.
        kind: Its stage kind.
        status: Its status (``completed`` unless the scope is ``debug_all_statuses``).
        hops: Edges between the origin and the node (minimum over directions).
        score: Weighted mean of the three axes, in [0, 1].
        graph: Graph axis: random-walk influence, or ``1 / (1 + hops)``.
        temporal: Temporal axis: ``1 / (1 + age / time_scale)``.
        semantic: Semantic axis: scorer(query text, body text), 0 without text.
        routing_key: The extracted routing key (the kind when none was found).
        body_text: The extracted body text.
        evidence: The extracted evidence strings.
        output: The node's raw output.
    """

    node_id: NodeId
    kind: str
    status: NodeStatus
    hops: int
    score: float
    graph: float
    temporal: float
    semantic: float
    routing_key: str
    body_text: str
    evidence: tuple[str, ...]
    output: Any

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {
            "node_id": self.node_id,
            "kind": self.kind,
            "status": self.status,
            "hops": self.hops,
            "score": self.score,
            "graph": self.graph,
            "temporal": self.temporal,
            "semantic": self.semantic,
            "routing_key": self.routing_key,
            "body_text": self.body_text,
            "evidence": list(self.evidence),
            "output": self.output,
        }


@dataclass(frozen=True, slots=True)
class Ranking:
    """The first matches of a ranking, and how many candidates the full ranking held.

    Attributes:
        matches: The ranked matches, after the limit.
        total: Candidates that passed every filter, before the limit.
    """

    matches: tuple[Match, ...]
    total: int
