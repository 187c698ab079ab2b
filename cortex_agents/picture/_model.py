"""The render model: what a picture of one run shows, read off its :class:`GraphState`.

Pure: no I/O, no clock, no LangGraph. Every renderer (Mermaid, HTML, PNG)
draws the same :class:`Picture`, so they agree on which nodes a rewrite
added, which are retired and which proposals were turned down.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cortex_agents.errors import UnknownNode
from cortex_agents.substrate._state import GraphState

__all__ = [
    "PREVIEW_CHARS",
    "AdmittedRewrite",
    "Picture",
    "PictureNode",
    "RejectedProposal",
    "picture_of",
]

_REWRITE_TAG: Final = re.compile(r"rewrite-([0-9]+)")
PREVIEW_CHARS: Final = 240
"""How much of a node's output (as compact JSON) the picture keeps."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PictureNode:
    """One node as drawn.

    Attributes:
        id: The node id.
        kind: Its stage kind.
        status: ``pending``, ``running``, ``completed``, ``failed`` or ``retired``.
        order: Its position in scheduling order (0-based).
        rewrite_id: The admitted rewrite that added it; ``None`` for a wire stage.
        retired_by: The admitted rewrite that retired it, when known.
        attempts: How many times its stage started.
        error: The failure message of a failed node.
        output: Its output as compact JSON, cut to :data:`PREVIEW_CHARS`; ``None`` if none.
    """

    id: str
    kind: str
    status: str
    order: int
    rewrite_id: int | None = None
    retired_by: int | None = None
    attempts: int = 0
    error: str | None = None
    output: str | None = None

    @property
    def retired(self) -> bool:
        """Whether the node is out of the graph."""
        return self.status == "retired"


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmittedRewrite:
    """An admitted rewrite, as the picture lists it.

    Attributes:
        rewrite_id: Its id.
        proposer: The proposing node.
        op: ``append_after`` or ``expand_node``.
        mode: ``replace`` / ``retain`` for ``expand_node``, else ``None``.
        anchor: The node it was anchored at.
        nodes: The ids it added, in the proposal's order.
        retired: The ids it retired.
        cost: Its cost per budget dimension.
        budget_before: The remaining budget before it.
        budget_after: The remaining budget after it.
        rationale: The proposer's stated reason, if any.
        applied: Whether its nodes and edges are in the graph yet (an admitted
            rewrite beyond the watermark — a run stopped between decision and
            materialization — is not).
    """

    rewrite_id: int
    proposer: str
    op: str
    mode: str | None
    anchor: str
    nodes: tuple[str, ...]
    retired: tuple[str, ...]
    cost: Mapping[str, int]
    budget_before: Mapping[str, int]
    budget_after: Mapping[str, int]
    rationale: str | None = None
    applied: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedProposal:
    """A rejected proposal, as the picture lists it.

    Attributes:
        index: Its position among the run's rewrite decisions (0-based).
        proposer: The proposing node.
        code: The rejection code (``rewrite_budget_exceeded``, ...).
        check: The failing check (``budget.nodes``, ...).
        reason: Why, in words.
        op: The proposal's ``op`` when it named one.
        anchor: The proposal's ``anchor`` when it named one.
        budget_before: The remaining budget when it was decided.
    """

    index: int
    proposer: str
    code: str
    check: str
    reason: str
    op: str | None
    anchor: str | None
    budget_before: Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Picture:
    """Everything a rendering of one run shows.

    Attributes:
        title: A heading (the thread id, for the CLI).
        nodes: Every node, in scheduling order.
        edges: The live edges, in the order they were added.
        admitted: Admitted rewrites, by ``rewrite_id``.
        rejected: Rejected proposals, in decision order.
        budget: The run's granted rewrite budget, when it set one.
    """

    title: str
    nodes: tuple[PictureNode, ...]
    edges: tuple[tuple[str, str], ...]
    admitted: tuple[AdmittedRewrite, ...]
    rejected: tuple[RejectedProposal, ...]
    budget: Mapping[str, int] | None = None

    def node(self, node_id: str) -> PictureNode:
        """The node with this id.

        Raises:
            UnknownNode: (a ``LookupError``) no such node.
        """
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise UnknownNode(node_id)

    def status_counts(self) -> dict[str, int]:
        """How many nodes have each status, in first-seen order."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.status] = counts.get(n.status, 0) + 1
        return counts


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _preview(output: Any) -> str | None:
    if output is None:
        return None
    try:
        # sort_keys and compact separators: the same output previews the same bytes,
        # so pictures of one run compare equal across processes.
        text = json.dumps(output, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(output)
    # One character is kept for the ellipsis so a cut preview is still PREVIEW_CHARS long.
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _admitted(fact: Any, watermark: int) -> AdmittedRewrite:
    diff = fact.diff or {}
    return AdmittedRewrite(
        rewrite_id=fact.rewrite_id,
        proposer=str(fact.proposer),
        # The diff is what was applied; the proposal is the fallback for a fact
        # recorded without one.
        op=str(diff.get("op", fact.proposal.get("op", "?"))),
        mode=_text(diff.get("mode")),
        anchor=str(diff.get("anchor", fact.proposal.get("anchor", "?"))),
        nodes=tuple(str(n["id"]) for n in diff.get("nodes", ())),
        retired=tuple(str(n) for n in diff.get("retired", ())),
        cost=dict(fact.cost),
        budget_before=dict(fact.budget_before),
        budget_after=dict(fact.budget_after),
        rationale=_text(fact.proposal.get("rationale")),
        applied=fact.rewrite_id <= watermark,
    )


def picture_of(state: GraphState, *, title: str = "graph") -> Picture:
    """The render model of ``state``.

    A node counts as added by rewrite ``N`` when admitted fact ``N``'s diff
    lists it, or — for substrates whose facts are gone — when it carries the
    ``rewrite-N`` tag materialization gives it.

    Args:
        state: The materialized graph of one run.
        title: A heading for the picture.
    """
    admitted: list[AdmittedRewrite] = []
    rejected: list[RejectedProposal] = []
    for index, fact in enumerate(state.rewrites):
        if fact.decision == "admitted" and fact.rewrite_id is not None:
            admitted.append(_admitted(fact, state.watermark))
        elif fact.decision == "rejected":
            proposal = fact.proposal if isinstance(fact.proposal, Mapping) else {}
            rejected.append(
                RejectedProposal(
                    index=index,
                    proposer=str(fact.proposer),
                    code=str(fact.code or "rejected"),
                    check=str(fact.check or ""),
                    reason=str(fact.reason or ""),
                    op=_text(proposal.get("op")),
                    anchor=_text(proposal.get("anchor")),
                    budget_before=dict(fact.budget_before),
                )
            )
    added_by = {n: r.rewrite_id for r in admitted for n in r.nodes}
    retired_by = {n: r.rewrite_id for r in admitted for n in r.retired}
    nodes = []
    for order, record in enumerate(state.nodes.values()):
        rewrite_id = added_by.get(record.id)
        if rewrite_id is None:
            # fullmatch, not search: a wire's own tag such as `my-rewrite-2` is not a rewrite's.
            tagged = (m for m in map(_REWRITE_TAG.fullmatch, record.tags) if m)
            rewrite_id = next((int(m.group(1)) for m in tagged), None)
        nodes.append(
            PictureNode(
                id=str(record.id),
                kind=record.kind,
                status=record.status,
                order=order,
                rewrite_id=rewrite_id,
                retired_by=retired_by.get(record.id),
                attempts=record.attempts,
                error=record.error,
                output=_preview(record.output),
            )
        )
    return Picture(
        title=title,
        nodes=tuple(nodes),
        edges=tuple((str(e.source), str(e.target)) for e in state.edges),
        admitted=tuple(sorted(admitted, key=lambda r: r.rewrite_id)),
        rejected=tuple(rejected),
        budget=dict(state.budget) if state.budget is not None else None,
    )
