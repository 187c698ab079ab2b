"""The latest completed work a graph-bound tool call links after, kept per branch.

:func:`latest_work` is what ``graph_memory_tools`` links a call after when no
``after`` is configured: the completed nodes of another kind than the
agent's that have no completed successor of another kind, in scheduling
order. It is kept on the log's branch as a derived structure
(:class:`LatestWork`), so a call costs the events since the previous call,
not a pass over every node and edge.

Both sets it is made of only grow: a completed node stays completed (only a
running node completes, and a completed one never starts again), and an
edge between two completed nodes is never removed (only an edge into a
pending node is). So the answer is a set that nodes enter when they
complete and leave when they are first covered, each with the tick it did.

Pure: substrate events and states only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from cortex_agents.substrate._events import EdgeAdded, Event, NodeScheduled, StageCompleted
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import NodeId
from cortex_agents.substrate._state import GraphState

__all__ = ["LatestWork", "latest_work"]


def latest_work(log: SubstrateLog, agent_kind: str) -> tuple[NodeId, ...]:
    """Completed nodes not of ``agent_kind`` with no completed successor not of it, in scheduling order.

    O(events since the previous call on this branch) — see :class:`LatestWork`.
    """
    return log.derived(("latest_work", agent_kind), lambda: LatestWork(agent_kind))


class LatestWork:
    """:func:`latest_work` of one agent kind, extended by each new event (a branch's derived structure).

    Attributes:
        agent_kind: The kind whose nodes are not work.
        length: How many events it has taken in.
    """

    def __init__(self, agent_kind: str) -> None:
        self.agent_kind = agent_kind
        self.length = 0
        self._order: dict[NodeId, int] = {}  # scheduling position of every node
        self._entered: dict[NodeId, int] = {}  # tick each node became work (completed)
        self._covered: dict[NodeId, int] = {}  # tick it got a completed successor that is work
        self._open: dict[NodeId, None] = {}  # work, not covered, as of `length`

    def extend(self, events: Sequence[Event], state: GraphState) -> None:
        """Take in the next ``events``; ``state`` is the state after all of them.

        An edge of ``state`` counts at a completion only if it was added by
        then: edges the rest of the batch adds (an edge is never doubled) are
        held back until their own event.
        """
        later = Counter((e.source, e.target) for e in events if isinstance(e, EdgeAdded))
        tick = self.length
        for event in events:
            if isinstance(event, NodeScheduled):
                self._order[event.node_id] = len(self._order)
            elif isinstance(event, EdgeAdded):
                later[(event.source, event.target)] -= 1
                if event.source in self._entered and event.target in self._entered:
                    self._cover(event.source, tick)
            elif isinstance(event, StageCompleted):
                node = event.node_id
                if state.nodes[node].kind != self.agent_kind:
                    self._entered[node] = tick
                    self._open[node] = None
                    self._completed(node, state, later, tick)
            tick += 1
        self.length = tick

    def _completed(
        self, node: NodeId, state: GraphState, later: Counter[tuple[NodeId, NodeId]], tick: int
    ) -> None:
        """Cover what ``node``, now work, covers (and ``node``, if its successors already are)."""
        for pred in state.predecessors(node):
            if pred in self._entered and not later[(pred, node)]:
                self._cover(pred, tick)
        for succ in state.successors(node):
            if succ in self._entered and not later[(node, succ)]:
                self._cover(node, tick)

    def _cover(self, node: NodeId, tick: int) -> None:
        if node not in self._covered:
            self._covered[node] = tick
            self._open.pop(node, None)

    def at(self, length: int) -> tuple[NodeId, ...]:
        """The answer as of the first ``length`` events (``<= self.length``)."""
        if length == self.length:
            nodes = list(self._open)
        else:  # an older prefix: from the ticks (one pass over the work)
            nodes = [
                n
                for n, entered in self._entered.items()
                if entered < length and self._covered.get(n, length) >= length
            ]
        return tuple(sorted(nodes, key=self._order.__getitem__))
