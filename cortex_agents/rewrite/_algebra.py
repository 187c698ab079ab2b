"""The algebra's semantics: the structural diff a proposal makes to the graph.

With ``P`` the anchor's predecessors, ``S`` its successors, ``E`` the entry
set and ``X`` the exit set (local ids namespaced ``anchor:local``):

==============================  ==========================================  ====================
form                            edges added (besides the local ones)        edges removed
==============================  ==========================================  ====================
``append_after``                anchor -> E, X -> S                         anchor -> S
``expand_node`` ``retain``      anchor -> E, X -> S                         none (the anchor, an
                                                                            envelope, still feeds S)
``expand_node`` ``replace``     P -> E, X -> S                              P -> anchor, anchor -> S;
                                                                            the anchor retires
==============================  ==========================================  ====================

Every added edge touches a new node, so an acyclic local subgraph on an
acyclic graph stays acyclic; admission checks it anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cortex_agents.rewrite._spec import RewriteProposal
from cortex_agents.substrate._state import GraphState

__all__ = ["RewriteDiff", "global_id", "plan_diff"]

Pair = tuple[str, str]


def global_id(anchor: str, local: str) -> str:
    """The id a local node gets: ``<anchor>:<local>``."""
    return f"{anchor}:{local}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RewriteDiff:
    """What an admitted rewrite changes, in the order it is applied.

    Attributes:
        op: ``expand_node`` or ``append_after``.
        anchor: The anchor.
        mode: ``replace`` / ``retain``, or ``None``.
        nodes: New nodes: ``{"id", "kind", "config"}``, in the proposal's order.
        entry: New ids of the entry set.
        exit: New ids of the exit set.
        edges_added: ``(source, target)`` pairs: into the entry set, local, out of the exit set.
        edges_removed: Pairs reattached away.
        retired: Nodes taken out (the anchor of a ``replace``).
    """

    op: str
    anchor: str
    mode: str | None
    nodes: tuple[Mapping[str, Any], ...]
    entry: tuple[str, ...]
    exit: tuple[str, ...]
    edges_added: tuple[Pair, ...]
    edges_removed: tuple[Pair, ...]
    retired: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a rewrite fact records."""
        return {
            "op": self.op,
            "anchor": self.anchor,
            "mode": self.mode,
            "nodes": [
                {"id": n["id"], "kind": n["kind"], "config": dict(n["config"])} for n in self.nodes
            ],
            "entry": list(self.entry),
            "exit": list(self.exit),
            "edges_added": [list(e) for e in self.edges_added],
            "edges_removed": [list(e) for e in self.edges_removed],
            "retired": list(self.retired),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewriteDiff:
        """Rebuild a diff from :meth:`to_dict`'s form."""
        return cls(
            op=data["op"],
            anchor=data["anchor"],
            mode=data.get("mode"),
            nodes=tuple(data["nodes"]),
            entry=tuple(data["entry"]),
            exit=tuple(data["exit"]),
            edges_added=tuple((s, t) for s, t in data["edges_added"]),
            edges_removed=tuple((s, t) for s, t in data["edges_removed"]),
            retired=tuple(data["retired"]),
        )


def plan_diff(
    state: GraphState,
    proposal: RewriteProposal,
    base_config: Mapping[str, Mapping[str, Any]],
) -> RewriteDiff:
    """The diff of ``proposal`` on ``state`` (its anchor must exist).

    A new node's config is its kind's base config (``base_config[kind]``)
    overlaid with the node's own.
    """
    anchor = proposal.anchor
    spec = proposal.spec

    def new(local: str) -> str:
        return global_id(anchor, local)

    nodes = tuple(
        {
            "id": new(n.id),
            "kind": n.kind,
            # The proposal's own keys win: the kind's base config is only the default.
            "config": {**dict(base_config.get(n.kind, {})), **dict(n.config)},
        }
        for n in spec.nodes
    )
    entry = tuple(new(x) for x in spec.entry)
    exit_ = tuple(new(x) for x in spec.exit)
    preds, succs = state.predecessors(anchor), state.successors(anchor)
    # A replaced anchor retires, so its predecessors feed the entry set directly;
    # otherwise the anchor stays and feeds the entry set itself.
    upstream = preds if proposal.form == "expand_replace" else (anchor,)
    edges_added = (
        *((u, e) for u in upstream for e in entry),
        *((new(s), new(t)) for s, t in spec.edges),
        *((x, s) for x in exit_ for s in succs),
    )
    if proposal.form == "append_after":
        removed: tuple[Pair, ...] = tuple((anchor, s) for s in succs)
    elif proposal.form == "expand_replace":
        removed = (*((p, anchor) for p in preds), *((anchor, s) for s in succs))
    else:
        removed = ()
    return RewriteDiff(
        op=proposal.op,
        anchor=anchor,
        mode=proposal.mode,
        nodes=nodes,
        entry=entry,
        exit=exit_,
        edges_added=edges_added,
        edges_removed=removed,
        retired=(anchor,) if proposal.form == "expand_replace" else (),
    )
