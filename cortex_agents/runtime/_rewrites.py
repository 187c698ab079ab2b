"""A stage's channel to the admission controller: propose, get the decision.

A :class:`RewriteSession` is bound when a rewrite-capable stage starts, over
the graph as the runtime then holds it. Each :meth:`~RewriteSession.propose`
runs the pure :func:`~cortex_agents.rewrite.admit` and journals the decision
(``rewrite_admitted`` / ``rewrite_rejected``) with the stage's events; the
session then sees its own admitted rewrites as materialized, so a second
proposal builds on the first and spends what is left of the budget. The
runtime materializes admitted rewrites into the substrate right after the
stage's superstep — or, after a crash, before it schedules anything else.

Idempotent: every decision carries a key, ``<stage>#<attempt>:<call id>``
(a stage function's proposals, and a model's calls that carry no id, are
numbered ``p1``, ``p2``, ...). The same call made again — same key, same
proposal — returns the recorded decision; nothing is admitted twice. A key
already decided for a *different* proposal (a model reusing a call id, or a
call id that happens to read ``p2``) is not a replay: that proposal is
decided on its own under ``<key>~2``, ``<key>~3``, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from cortex_agents.rewrite._admission import Rejection, admit, recorded_proposal, refuse
from cortex_agents.rewrite._budget import remaining
from cortex_agents.rewrite._materialize import materialize
from cortex_agents.rewrite._policy import RewritePolicy
from cortex_agents.runtime._clock import Clock
from cortex_agents.substrate._events import Event, RewriteAdmitted, RewriteRejected
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._records import NodeId, RewriteFact
from cortex_agents.substrate._state import GraphState

__all__ = ["HasRewrites", "RewriteSession"]


@runtime_checkable
class HasRewrites(Protocol):
    """A context that may carry a stage's rewrite session, as ``rewrites``.

    A stage's :class:`~cortex_agents.runtime.StageContext` is one (``None``
    unless its wire declaration makes it rewrite-capable); the
    ``propose_rewrite`` tool reads its session through it.
    """

    @property
    def rewrites(self) -> RewriteSession | None:
        """The stage's rewrite session, or ``None`` when it cannot propose rewrites."""
        ...


class RewriteSession:
    """One stage attempt's proposals.

    Args:
        proposer: The stage's node id.
        state: The graph as the runtime held it when the stage started.
        policy: The stage's rewrite policy.
        vocabulary: Registered kinds and the base config of their new nodes.
        granted: The run's budget (the substrate's, once the run fixed it).
        attempt: The stage's attempt number (1 on its first run).
        clock: The stage's clock (decision times).
        record: Where decisions are journaled (the stage context's ``record``).
    """

    def __init__(
        self,
        *,
        proposer: NodeId,
        state: GraphState,
        policy: RewritePolicy,
        vocabulary: Mapping[str, Mapping[str, Any]],
        granted: Mapping[str, int],
        attempt: int,
        clock: Clock,
        record: Callable[[Event], None],
    ) -> None:
        self.proposer = proposer
        self.policy = policy
        self.vocabulary = dict(vocabulary)
        self.granted = dict(granted)
        self.attempt = attempt
        self._state = state
        self._clock = clock
        self._record = record
        self._made = 0
        self.decisions: list[RewriteFact] = []

    @property
    def state(self) -> GraphState:
        """The graph as this stage's admitted rewrites leave it."""
        return self._state

    @property
    def budget_remaining(self) -> dict[str, int]:
        """The run's budget left, per dimension."""
        return remaining(self.granted, self._state.budget_spent())

    @property
    def attempts_left(self) -> int:
        """Proposals this stage attempt may still make."""
        return max(0, self.policy.attempts - self._made)

    def anchors(self) -> list[str]:
        """Where this stage may anchor a rewrite: itself, then its pending descendants (id order)."""
        state, seen, stack = self._state, set(), [self.proposer]
        while stack:
            for nxt in state.successors(stack.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        pending = sorted(n for n in seen if state.nodes[n].status == "pending")
        return [self.proposer, *pending]

    def _key(self, call_id: str | None, raw: Any) -> tuple[str, RewriteFact | None]:
        """The decision's key, and the decision already recorded for this very call."""
        decided = {f.key: f for f in self._state.rewrites}
        base = f"{self.proposer}#{self.attempt}:{call_id or f'p{self._made + 1}'}"
        key, n = base, 1
        while (fact := decided.get(key)) is not None:
            if call_id and fact.proposal == recorded_proposal(raw):
                return key, fact  # the same call made again
            n += 1
            key = f"{base}~{n}"
        return key, None

    def _decide(self, fact: RewriteFact) -> RewriteFact:
        at = self._clock()
        if fact.decision == "admitted":
            event: Event = RewriteAdmitted(fact=fact, at=at)
            self._state = fold([event, *materialize(fact, at)], self._state)
        else:
            event = RewriteRejected(fact=fact, at=at)
            self._state = fold([event], self._state)
        self._record(event)
        self.decisions.append(fact)
        return fact

    def reject_malformed(
        self, raw: Any, check: str, message: str, *, call_id: str | None = None
    ) -> RewriteFact:
        """Record a proposal whose arguments could not even be read (``invalid_rewrite``).

        It counts as one of the stage's attempts, like any proposal.
        """
        key, recorded = self._key(call_id, raw)
        if recorded is not None:
            return recorded
        self._made += 1
        return self._decide(
            refuse(
                self._state,
                raw,
                Rejection("invalid_rewrite", check, message),
                proposer=self.proposer,
                granted=self.granted,
                key=key,
            )
        )

    def propose(self, proposal: Any, *, call_id: str | None = None) -> RewriteFact:
        """Submit a proposal; the runtime decides and the decision is returned.

        Args:
            proposal: The JSON form (see :mod:`cortex_agents.rewrite._spec`) or a
                :class:`~cortex_agents.rewrite.RewriteProposal`.
            call_id: The model's tool-call id, for idempotency (``None`` for a
                stage function: proposals are numbered).

        Returns:
            The recorded decision: ``admitted`` (``rewrite_id``, ``diff``,
            budget after) or ``rejected`` (``code``, ``check``, ``reason``).
        """
        key, recorded = self._key(call_id, proposal)
        if recorded is not None:
            return recorded  # a replayed call: the decision stands
        self._made += 1
        return self._decide(
            admit(
                self._state,
                proposal,
                proposer=self.proposer,
                vocabulary=self.vocabulary,
                policy=self.policy,
                granted=self.granted,
                attempt=self._made,
                key=key,
            )
        )
