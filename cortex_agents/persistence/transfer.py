"""Export, import and inspect a thread's substrate (DESIGN §8).

A snapshot file holds the materialized graph, not the events. Import turns
it back into the one canonical event sequence that folds into it
(:func:`document_events`): nodes and edges in canonical order, then each
node's lifecycle in time order. Exporting an imported thread therefore
reproduces the file byte for byte.

Import is strict by default: the file is fully validated first and a single
problem means nothing is written. ``forensic=True`` imports the valid parts
instead (invalid nodes, dangling or duplicate edges and edges that would close
a cycle are left out) and returns every problem found. In this substrate the
database enforces referential integrity, so "forensic" cannot mean loading
dangling rows, as seed 004's ``allow_dangling_edges`` did: it means a repair
import with a full report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from cortex_agents.errors import InvalidArgument, Problem, UnknownNode
from cortex_agents.memory.snapshot import MemorySnapshot
from cortex_agents.persistence.saver import CortexSaver
from cortex_agents.snapshot_events import document_events
from cortex_agents.snapshot_file import SnapshotDocument
from cortex_agents.substrate.events import StageStarted
from cortex_agents.substrate.log import SubstrateLog
from cortex_agents.timestamps import format_timestamp, parse_timestamp

_ENTRY_TIME = "cortex_entry_time"
_RUN_ID = "cortex_run_id"

__all__ = [
    "ImportReport",
    "UnknownThread",
    "document_events",
    "export_as_seen_by",
    "export_document",
    "import_document",
    "thread_config",
]


class UnknownThread(UnknownNode):
    """A thread (run) that has no checkpoint in the database."""

    code = "unknown_thread"

    def __init__(self, thread_id: str, checkpoint_id: str | None = None) -> None:
        UnknownNode.__init__(self, thread_id)
        self.checkpoint_id = checkpoint_id
        if checkpoint_id is None:
            self.args = (f"no thread {thread_id!r} in this database",)
        else:
            self.args = (
                f"no checkpoint {checkpoint_id!r} of thread {thread_id!r} in this database",
            )


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did.

    Attributes:
        thread_id: The thread written.
        events: How many events were stored.
        nodes: How many nodes were imported.
        edges: How many edges were imported.
        problems: What was left out (forensic imports only; empty otherwise).
    """

    thread_id: str
    events: int
    nodes: int
    edges: int
    problems: tuple[Problem, ...] = ()


def thread_config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """The LangGraph config of a thread (its latest checkpoint unless one is named)."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def export_document(
    saver: CortexSaver, thread_id: str, *, checkpoint_id: str | None = None
) -> SnapshotDocument:
    """The snapshot document of a thread's substrate (its latest checkpoint by default).

    ``entry_time`` is the time of the substrate's newest event and ``run_id``
    the thread id — or, for a checkpoint written by :func:`import_document`,
    the imported file's own, so an import exports back byte for byte.

    Raises:
        UnknownThread: the thread has no checkpoint with a substrate.
    """
    tup = saver.get_tuple(thread_config(thread_id, checkpoint_id))
    log = None if tup is None else tup.checkpoint["channel_values"].get(saver.channel)
    if log is None:
        if checkpoint_id is not None and saver.get_tuple(thread_config(thread_id)) is not None:
            raise UnknownThread(thread_id, checkpoint_id)
        raise UnknownThread(thread_id)
    entry_time = latest_time(log)
    metadata = tup.metadata or {}
    imported = metadata.get(_ENTRY_TIME)
    if imported is not None:
        entry_time = max(entry_time, parse_timestamp(imported, _ENTRY_TIME))
    run_id = metadata.get(_RUN_ID, thread_id)
    return SnapshotDocument.from_state(log.state, entry_time, run_id=run_id)


def export_as_seen_by(saver: CortexSaver, thread_id: str, stage_id: str) -> SnapshotDocument:
    """The snapshot exactly as a stage saw it at entry (its latest recorded start).

    The document holds the substrate prefix the stage's memory was bound to,
    referenced at the stage's entry time: querying it from the stage gives
    the ranking the stage got.

    Raises:
        UnknownThread: the thread has no substrate.
        UnknownNode: the stage never started with a recorded snapshot.
    """
    tup = saver.get_tuple(thread_config(thread_id))
    log = None if tup is None else tup.checkpoint["channel_values"].get(saver.channel)
    if log is None:
        raise UnknownThread(thread_id)
    started = [
        e
        for e in log
        if isinstance(e, StageStarted) and e.node_id == stage_id and e.frontier is not None
    ]
    if not started:
        error = UnknownNode(stage_id)
        error.args = (
            f"stage {stage_id!r} has no recorded start with a memory snapshot in {thread_id!r}",
        )
        raise error
    entry = started[-1]
    seen = log.prefix(entry.frontier)  # type: ignore[arg-type]
    return SnapshotDocument.from_state(seen.state, entry.at, run_id=thread_id)


def latest_time(log: SubstrateLog) -> datetime:
    """The time of the newest event (the reference time of an export)."""
    if not len(log):
        raise InvalidArgument("substrate", "is empty: there is nothing to export", log)
    return max(event.at for event in log)


def memory_snapshot(
    saver: CortexSaver, thread_id: str, *, checkpoint_id: str | None = None
) -> MemorySnapshot:
    """The memory snapshot of a thread, referenced at its newest event."""
    document = export_document(saver, thread_id, checkpoint_id=checkpoint_id)
    return document.to_memory_snapshot()


def import_document(
    saver: CortexSaver,
    thread_id: str,
    document: SnapshotDocument,
    *,
    problems: tuple[Problem, ...] = (),
) -> ImportReport:
    """Write ``document`` as a new thread: its events, then one checkpoint pointing at them.

    Raises:
        InvalidArgument: the thread already exists.
        InvalidEvent: the document does not fold (it was not validated).
    """
    if saver.get_tuple(thread_config(thread_id)) is not None:
        raise InvalidArgument("thread", "already exists; import into a new thread id", thread_id)
    log = SubstrateLog().appended(document_events(document))  # folds: validates before writing
    checkpoint = empty_checkpoint()
    version = saver.get_next_version(None, None)
    checkpoint["channel_values"] = {saver.channel: log}
    checkpoint["channel_versions"] = {saver.channel: version}
    metadata: Any = {
        "source": "input",
        "step": -1,
        "parents": {},
        _ENTRY_TIME: format_timestamp(document.entry_time),
        _RUN_ID: document.run_id or thread_id,
    }
    saver.put(thread_config(thread_id), checkpoint, metadata, {saver.channel: version})
    return ImportReport(
        thread_id=thread_id,
        events=len(log),
        nodes=len(document.nodes),
        edges=len(document.edges),
        problems=problems,
    )
