"""What a database holds: threads, and a thread's nodes, edges and rewrite facts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cortex_agents._timestamps import format_timestamp
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._transfer import UnknownThread, latest_time, thread_config
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import RewriteFact

__all__ = ["ThreadSummary", "describe_thread", "list_threads", "thread_log"]


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """One thread at its latest checkpoint.

    Attributes:
        thread_id: The thread.
        events: Events in its substrate.
        nodes: Nodes, of any status.
        settled: Completed nodes.
        failed: Failed nodes.
        rewrites: Rewrite decisions recorded.
        last_event_at: Time of the newest event.
    """

    thread_id: str
    events: int
    nodes: int
    settled: int
    failed: int
    rewrites: int
    last_event_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "thread_id": self.thread_id,
            "events": self.events,
            "nodes": self.nodes,
            "settled": self.settled,
            "failed": self.failed,
            "rewrites": self.rewrites,
            "last_event_at": format_timestamp(self.last_event_at) if self.last_event_at else None,
        }


def thread_log(saver: CortexSaver, thread_id: str) -> SubstrateLog:
    """A thread's substrate as of its latest checkpoint.

    Raises:
        UnknownThread: the thread has no checkpoint with a substrate.
    """
    log = saver.substrate(thread_config(thread_id))
    if log is None:
        raise UnknownThread(thread_id)
    return log


def _summary(thread_id: str, log: SubstrateLog) -> ThreadSummary:
    state = log.state
    statuses = [n.status for n in state.nodes.values()]
    return ThreadSummary(
        thread_id=thread_id,
        events=len(log),
        nodes=len(statuses),
        settled=statuses.count("completed"),
        failed=statuses.count("failed"),
        rewrites=len(state.rewrites),
        last_event_at=latest_time(log) if len(log) else None,
    )


def list_threads(saver: CortexSaver) -> list[ThreadSummary]:
    """Every thread with a substrate, by thread id (code-point order)."""
    summaries = []
    for thread_id in saver.store.threads():
        log = saver.substrate(thread_config(thread_id))
        if log is not None:  # rows of a thread whose checkpoints are gone are not a thread
            summaries.append(_summary(thread_id, log))
    return summaries


def describe_thread(saver: CortexSaver, thread_id: str) -> dict[str, Any]:
    """A thread's summary, nodes (scheduling order), edges (insertion order) and rewrites.

    Raises:
        UnknownThread: the thread has no checkpoint with a substrate.
    """
    log = thread_log(saver, thread_id)
    state = log.state
    return {
        "summary": _summary(thread_id, log).to_dict(),
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "status": n.status,
                "attempts": n.attempts,
                "captured_at": format_timestamp(n.captured_at),
                "completed_at": format_timestamp(n.completed_at) if n.completed_at else None,
                "error": n.error,
            }
            for n in state.nodes.values()
        ],
        "edges": [{"source": e.source, "target": e.target} for e in state.edges],
        "rewrites": [
            {
                "rewrite_id": r.rewrite_id,
                "proposer": r.proposer,
                "decision": r.decision,
                "code": r.code,
                "check": r.check,
                "reason": r.reason,
                "operation": _operation(r),
                "new_nodes": [n["id"] for n in r.diff.get("nodes", ())],
                "retired": list(r.diff.get("retired", ())),
                "applied": r.rewrite_id is not None and r.rewrite_id <= state.watermark,
                "cost": dict(r.cost),
                "budget_before": dict(r.budget_before),
                "budget_after": dict(r.budget_after),
                "key": r.key,
            }
            for r in state.rewrites
        ],
        "budget": dict(state.budget) if state.budget is not None else None,
        "watermark": state.watermark,
    }


def _operation(fact: RewriteFact) -> str:
    """``op(anchor[, mode])`` of a proposal, as far as it can be read."""
    proposal = fact.proposal if isinstance(fact.proposal, dict) else {}
    op, anchor = proposal.get("op", "?"), proposal.get("anchor", "?")
    mode = proposal.get("mode")
    return f"{op}({anchor}{', ' + str(mode) if mode else ''})"
