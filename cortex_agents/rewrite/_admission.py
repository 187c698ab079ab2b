"""Admission: the runtime's decision on a rewrite proposal, pure and deterministic.

:func:`admit` runs the checks in a fixed order and stops at the first that
fails; the proposal is then rejected whole — nothing of it applies and no
budget is spent:

1. **attempts** — the stage has proposals left (``policy_rejected``);
2. **shape** — :func:`~cortex_agents.rewrite.parse_proposal` (``invalid_rewrite``);
3. **vocabulary** — every local node's kind is registered (``vocabulary_violation``);
4. **topology** — the anchor exists and is not retired, new ids are fresh,
   local edges and the entry and exit sets name local nodes, the sets are
   non-empty and duplicate-free, every local node lies on an entry-to-exit
   path (no orphans) (``invalid_rewrite``), and the result is a DAG
   (``cycle_introduced``);
5. **budget** — the static cost fits the remaining budget on every
   dimension (``rewrite_budget_exceeded``);
6. **policy** — the form is one the stage may use, the anchor is the stage
   or one of its pending descendants, never settled work, and a stage never
   replaces itself (``policy_rejected``).

The decision is a :class:`~cortex_agents.substrate.RewriteFact`
whose reason names the proposing node and the failing check. An admitted
fact carries the next ``rewrite_id``, its cost, the budget before and after,
and the diff to materialize.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cortex_agents.errors import Rejection
from cortex_agents.rewrite._algebra import RewriteDiff, global_id, plan_diff
from cortex_agents.rewrite._budget import exceeded, local_shape, remaining, subtract
from cortex_agents.rewrite._policy import RewritePolicy
from cortex_agents.rewrite._spec import ProposalInvalid, RewriteProposal, parse_proposal
from cortex_agents.substrate._bounds import MAX_ID_CHARS
from cortex_agents.substrate._records import NodeId, RewriteFact
from cortex_agents.substrate._state import GraphState

__all__ = ["Rejection", "admit", "recorded_proposal", "refuse", "static_cost"]


def static_cost(proposal: RewriteProposal, diff: RewriteDiff) -> dict[str, int]:
    """The cost of a rewrite on each budget dimension (see :mod:`~cortex_agents.rewrite._budget`)."""
    depth, widest = local_shape([n.id for n in proposal.spec.nodes], proposal.spec.edges)
    return {
        "nodes": len(diff.nodes),
        "edges": len(diff.edges_added),
        "depth": depth,
        # The subgraph takes the anchor's one slot in the chain; only the extra width counts.
        "breadth": max(0, widest - 1),
        "operations": 1,
    }


def recorded_proposal(raw: Any) -> dict[str, Any]:
    """The proposal as recorded: JSON, whatever was submitted."""
    if isinstance(raw, RewriteProposal):
        try:
            raw = raw.to_dict()
        except (TypeError, ValueError, AttributeError):
            return {"submitted": repr(raw)}
    try:
        # A rejected proposal is recorded whatever it holds: default=repr keeps the
        # unserializable parts as text instead of failing the record.
        value = json.loads(json.dumps(raw, allow_nan=False, default=repr))
    except (TypeError, ValueError):
        value = repr(raw)
    return value if isinstance(value, dict) else {"submitted": value}


def _reachable(starts: Iterable[str], links: Mapping[str, list[str]]) -> set[str]:
    seen = set(starts)
    stack = list(seen)
    while stack:
        for nxt in links.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _local_cycle(nodes: list[str], edges: tuple[tuple[str, str], ...]) -> list[str] | None:
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for s, t in edges:
        succs[s].append(t)
    # Iterative three-colour DFS (0 unseen, 1 on the path, 2 done): meeting a node
    # still on the path closes a cycle, and the path gives its members.
    color = dict.fromkeys(nodes, 0)
    for root in nodes:
        if color[root]:
            continue
        path, stack = [root], [iter(succs[root])]
        color[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                stack.pop()
            elif color[nxt] == 1:
                return [*path[path.index(nxt) :], nxt]
            elif color[nxt] == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append(iter(succs[nxt]))
    return None


def _descendants(state: GraphState, node: str) -> set[str]:
    seen: set[str] = set()
    stack = [node]
    while stack:
        for nxt in state.successors(stack.pop()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _check_topology(state: GraphState, proposal: RewriteProposal) -> None:
    anchor, spec = proposal.anchor, proposal.spec
    if anchor not in state.nodes:
        raise Rejection("invalid_rewrite", "topology.anchor", f"anchor {anchor!r} is not a node")
    if state.nodes[NodeId(anchor)].status == "retired":
        raise Rejection(
            "invalid_rewrite", "topology.anchor", f"anchor {anchor!r} is retired (out of the graph)"
        )
    local = [n.id for n in spec.nodes]
    for n in local:
        if len(global_id(anchor, n)) > MAX_ID_CHARS:  # the anchor's id grows with each nesting
            raise Rejection(
                "invalid_rewrite",
                "topology.ids",
                f"node id {global_id(anchor, n)[:60]!r}... would have "
                f"{len(global_id(anchor, n))} characters; a node id holds at most {MAX_ID_CHARS}",
            )
        if global_id(anchor, n) in state.nodes:
            raise Rejection(
                "invalid_rewrite",
                "topology.fresh",
                f"node {global_id(anchor, n)!r} exists already; pick a fresh local id",
            )
    known = set(local)
    pairs: set[tuple[str, str]] = set()
    for i, (s, t) in enumerate(spec.edges):
        for end in (s, t):
            if end not in known:
                raise Rejection(
                    "invalid_rewrite", f"topology.edges[{i}]", f"{end!r} is not a local node"
                )
        if (s, t) in pairs:
            raise Rejection(
                "invalid_rewrite", f"topology.edges[{i}]", f"duplicate edge {s!r} -> {t!r}"
            )
        pairs.add((s, t))
    for name, members in (("entry", spec.entry), ("exit", spec.exit)):
        if not members:
            raise Rejection("invalid_rewrite", f"topology.{name}", f"the {name} set is empty")
        if len(set(members)) != len(members):
            raise Rejection("invalid_rewrite", f"topology.{name}", f"the {name} set has duplicates")
        if unknown := [m for m in members if m not in known]:
            raise Rejection(
                "invalid_rewrite", f"topology.{name}", f"{unknown[0]!r} is not a local node"
            )
    if cycle := _local_cycle(local, spec.edges):
        raise Rejection(
            "cycle_introduced", "topology.dag", f"local edges close a cycle {' -> '.join(cycle)}"
        )
    forward: dict[str, list[str]] = {}
    backward: dict[str, list[str]] = {}
    for s, t in spec.edges:
        forward.setdefault(s, []).append(t)
        backward.setdefault(t, []).append(s)
    from_entry, to_exit = _reachable(spec.entry, forward), _reachable(spec.exit, backward)
    if orphans := [n for n in local if n not in from_entry or n not in to_exit]:
        raise Rejection(
            "invalid_rewrite",
            "topology.orphans",
            f"{orphans[0]!r} is not on a path from the entry set to the exit set",
        )


def _check_global_dag(state: GraphState, diff: RewriteDiff) -> None:
    """Belt and braces: no old successor may reach an old source of the new edges."""
    sources = {s for s, _ in diff.edges_added if s in state.nodes}
    targets = {t for _, t in diff.edges_added if t in state.nodes}
    for target in sorted(targets):  # id order: the rejection names the same node in every process
        if target in sources or sources & _descendants(state, target):
            raise Rejection(
                "cycle_introduced", "topology.dag", f"reattaching to {target!r} closes a cycle"
            )


def _check_policy(
    state: GraphState, proposal: RewriteProposal, proposer: str, policy: RewritePolicy
) -> None:
    if proposal.form not in policy.forms:
        raise Rejection(
            "policy_rejected",
            "policy.form",
            f"form {proposal.form!r} is not allowed for this stage; allowed: {list(policy.forms)}",
        )
    anchor = proposal.anchor
    if anchor == proposer:
        if proposal.form == "expand_replace":
            raise Rejection(
                "policy_rejected", "policy.anchor", "a stage cannot replace itself while it runs"
            )
        return
    if anchor not in _descendants(state, proposer):
        raise Rejection(
            "policy_rejected",
            "policy.anchor",
            f"anchor {anchor!r} is not at or below {proposer!r}; a stage only rewrites at or below itself",
        )
    status = state.nodes[NodeId(anchor)].status
    if status != "pending":
        raise Rejection(
            "policy_rejected",
            "policy.settled",
            f"anchor {anchor!r} is {status}; rewrites never touch started or settled work",
        )


def admit(
    state: GraphState,
    raw: Any,
    *,
    proposer: str,
    vocabulary: Mapping[str, Mapping[str, Any]],
    policy: RewritePolicy,
    granted: Mapping[str, int],
    attempt: int = 1,
    key: str | None = None,
) -> RewriteFact:
    """Decide one proposal against ``state``.

    Args:
        state: The graph as the proposer sees it (its own earlier admitted
            rewrites materialized).
        raw: The proposal: its JSON form or a :class:`RewriteProposal`.
        proposer: The proposing stage's node id.
        vocabulary: The registered stage kinds, each with the base config its
            new nodes start from.
        policy: The proposer's rewrite policy.
        granted: The run's total budget (``state.budget`` once the run set it).
        attempt: This proposal's number within the proposer's stage attempt (1-based).
        key: The idempotency key recorded with the decision.

    Returns:
        The decision, ready to record (``rewrite_admitted`` or ``rewrite_rejected``).
    """
    before = remaining(granted, state.budget_spent())
    recorded = recorded_proposal(raw)
    # Set before the checks: a rejection before the cost is known records an
    # empty cost; a budget rejection records the cost that did not fit.
    cost: dict[str, int] = {}
    try:
        # First, before parsing: past the cap a proposal is refused whatever it holds,
        # so a stage gets no further shape or topology feedback to revise with.
        if attempt > policy.attempts:
            raise Rejection(
                "policy_rejected",
                "policy.attempts",
                f"{policy.attempts} proposals per stage attempt; this is proposal {attempt}",
            )
        try:
            proposal = parse_proposal(raw)
        except ProposalInvalid as exc:
            raise Rejection("invalid_rewrite", exc.check, exc.message) from None
        for i, node in enumerate(proposal.spec.nodes):
            if node.kind not in vocabulary:
                raise Rejection(
                    "vocabulary_violation",
                    f"vocabulary.spec.nodes[{i}].kind",
                    f"kind {node.kind!r} is not registered; registered: {sorted(vocabulary)}",
                )
        _check_topology(state, proposal)
        diff = plan_diff(state, proposal, vocabulary)
        _check_global_dag(state, diff)
        cost = static_cost(proposal, diff)
        if over := exceeded(cost, before):
            detail = ", ".join(f"{d} needs {cost[d]}, {before[d]} left" for d in over)
            raise Rejection("rewrite_budget_exceeded", "budget." + ",".join(over), detail)
        _check_policy(state, proposal, proposer, policy)
    except Rejection as rejection:
        return refuse(state, raw, rejection, proposer=proposer, granted=granted, cost=cost, key=key)
    return RewriteFact(
        rewrite_id=state.last_rewrite_id + 1,
        proposer=NodeId(proposer),
        proposal=recorded,
        decision="admitted",
        cost=cost,
        budget_before=before,
        budget_after=subtract(before, cost),
        diff=diff.to_dict(),
        key=key,
    )


def refuse(
    state: GraphState,
    raw: Any,
    rejection: Rejection,
    *,
    proposer: str,
    granted: Mapping[str, int],
    cost: Mapping[str, int] | None = None,
    key: str | None = None,
) -> RewriteFact:
    """The rejected decision on ``raw`` for ``rejection`` (also used when a tool's
    arguments fail validation before a proposal can even be formed)."""
    before = remaining(granted, state.budget_spent())
    return RewriteFact(
        rewrite_id=None,
        proposer=NodeId(proposer),
        proposal=recorded_proposal(raw),
        decision="rejected",
        code=rejection.code,
        check=rejection.check,
        reason=f"proposal by {proposer!r} failed {rejection.check}: {rejection.message}",
        cost=dict(cost or {}),
        budget_before=before,
        budget_after=before,
        key=key,
    )
