"""Export, import and inspect a thread's substrate (DESIGN §8).

A snapshot file holds the materialized graph, not the events. Import turns
it back into the one canonical event sequence that folds into it
(:func:`document_events`): nodes and edges in canonical order, then each
node's lifecycle in time order. Exporting an imported thread therefore
reproduces the file byte for byte.

Import is one transaction on every backend: the substrate rows and the
checkpoint that points at them commit together or not at all (no orphan
branch or event rows after a failure, on SQLite and Postgres alike).

Import is strict by default: the file is fully validated first and a single
problem means nothing is written. Forensic import (seed 004's
``allow_dangling_edges``) loads everything: the rows that pass go into the
substrate, and every row that breaks integrity — dangling edges, edges that
close a cycle, rewrites of unknown proposers (orphans), rows that break the
format — goes into the thread too, *quarantined*: kept verbatim with its
location, category and problems in the import checkpoint's metadata, never
folded into the graph memory queries see (the database enforces referential
integrity on the substrate tables, so a dangling edge cannot be a substrate
row). :func:`quarantined_rows` returns them; ``validate DB --thread`` reports
them with the same located report as a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from cortex_agents._timestamps import format_timestamp, parse_timestamp
from cortex_agents.errors import InvalidArgument, Problem, UnknownNode, UnknownThread
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.rewrite._budget import budget_problems
from cortex_agents.snapshotfile import (
    LeftOut,
    Salvage,
    SnapshotDocument,
    check_identifier,
    document_events,
)
from cortex_agents.substrate._events import StageStarted
from cortex_agents.substrate._log import SubstrateLog

_ENTRY_TIME = "cortex_entry_time"
_RUN_ID = "cortex_run_id"
_QUARANTINE = "cortex_quarantine"
_ORPHANS = "cortex_orphans"

__all__ = [
    "ImportReport",
    "QuarantinedRow",
    "UnknownThread",
    "document_events",
    "export_as_seen_by",
    "export_document",
    "import_document",
    "import_salvage",
    "quarantined_rows",
    "thread_config",
]


@dataclass(frozen=True, slots=True)
class QuarantinedRow:
    """A row a forensic import kept in the thread but out of its graph.

    Attributes:
        location: Where the file held it, e.g. ``edges[8]``.
        category: ``dangling``, ``cycle``, ``orphan``, ``duplicate``,
            ``inconsistent`` or ``invalid``.
        problems: What is wrong with it, located.
        row: The row as the file held it, as compact ASCII JSON.
    """

    location: str
    category: str
    problems: tuple[Problem, ...]
    row: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "location": self.location,
            "category": self.category,
            "problems": [str(p) for p in self.problems],
            "row": self.row,
        }


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did.

    Attributes:
        thread_id: The thread written.
        events: How many events were stored.
        nodes: How many nodes were imported.
        edges: How many edges were imported.
        problems: Every problem of the file (forensic imports only; empty otherwise).
        quarantined: The rows kept in the thread, marked, out of its graph (forensic only).
        orphans: Nodes imported whose every edge was quarantined (forensic only).
    """

    thread_id: str
    events: int
    nodes: int
    edges: int
    problems: tuple[Problem, ...] = ()
    quarantined: tuple[QuarantinedRow, ...] = ()
    orphans: tuple[Problem, ...] = ()


def thread_config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
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
    metadata: dict[str, Any] = dict(tup.metadata or {}) if tup is not None else {}
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
    seen = log.prefix(entry.frontier)
    return SnapshotDocument.from_state(seen.state, entry.at, run_id=thread_id)


def latest_time(log: SubstrateLog) -> datetime:
    """The time of the newest event (the reference time of an export)."""
    if not len(log):
        raise InvalidArgument("substrate", "is empty: there is nothing to export", log)
    # The newest, not the last: stages of a frontier run in parallel, each on its own clock
    # (LogicalClock.for_stage), so log order is not time order.
    return max(event.at for event in log)


def memory_snapshot(
    saver: CortexSaver, thread_id: str, *, checkpoint_id: str | None = None
) -> MemorySnapshot:
    """The memory snapshot of a thread, referenced at its newest event."""
    document = export_document(saver, thread_id, checkpoint_id=checkpoint_id)
    return document.to_memory_snapshot()


@contextmanager
def _one_transaction(saver: CortexSaver, thread_id: str) -> Iterator[CortexSaver]:
    """A saver whose substrate and checkpoint writes commit together, or not at all."""
    try:
        with saver._transaction() as target:
            yield target
    except BaseException:
        if getattr(saver.store, "atomic", None) is None:  # the in-memory twin: undo what did
            saver.delete_thread(thread_id)
        raise


def _quarantine(row: LeftOut) -> QuarantinedRow:
    return QuarantinedRow(row.location, row.category, row.problems, row.row_json())


def import_document(
    saver: CortexSaver,
    thread_id: str,
    document: SnapshotDocument,
    *,
    problems: tuple[Problem, ...] = (),
    left_out: tuple[LeftOut, ...] = (),
    orphans: tuple[Problem, ...] = (),
) -> ImportReport:
    """Write ``document`` as a new thread in one transaction: its events and one checkpoint.

    ``left_out`` rows (a forensic reading's) are kept in the thread, quarantined.

    Raises:
        InvalidArgument: a bad thread id, the thread already exists, or the
            document has no node.
        InvalidEvent: the document does not fold (it was not validated).
        StorageError: the database refused; nothing was written.
    """
    check_identifier(thread_id, "thread")
    if not document.nodes:
        raise InvalidArgument("document", "has no nodes: there is nothing to import", thread_id)
    if document.rewrite_budget is not None:
        for where, rule in budget_problems(document.rewrite_budget):
            raise InvalidArgument(where, rule, dict(document.rewrite_budget))
    if saver.get_tuple(thread_config(thread_id)) is not None:
        raise InvalidArgument("thread", "already exists; import into a new thread id", thread_id)
    log = document._log  # a read document carries the log its reading checked and folded
    if log is None:
        log = SubstrateLog().appended(document_events(document))  # folds: validates first
    checkpoint = empty_checkpoint()
    version = saver.get_next_version(None, None)
    checkpoint["channel_values"] = {saver.channel: log}
    checkpoint["channel_versions"] = {saver.channel: version}
    quarantined = tuple(_quarantine(row) for row in left_out)
    metadata: Any = {
        "source": "input",
        "step": -1,
        "parents": {},
        _ENTRY_TIME: format_timestamp(document.entry_time),
        _RUN_ID: document.run_id or thread_id,
    }
    if quarantined or orphans:
        metadata[_QUARANTINE] = [row.to_dict() for row in quarantined]
        metadata[_ORPHANS] = [{"location": p.location, "message": p.message} for p in orphans]
    with _one_transaction(saver, thread_id) as target:
        target.put(thread_config(thread_id), checkpoint, metadata, {saver.channel: version})
    return ImportReport(
        thread_id=thread_id,
        events=len(log),
        nodes=len(document.nodes),
        edges=len(document.edges),
        problems=problems,
        quarantined=quarantined,
        orphans=orphans,
    )


def import_salvage(saver: CortexSaver, thread_id: str, salvage: Salvage) -> ImportReport:
    """Forensic import: the salvaged graph, with every left-out row quarantined in the thread."""
    return import_document(
        saver,
        thread_id,
        salvage.document,
        problems=salvage.problems,
        left_out=salvage.left_out,
        orphans=salvage.orphans,
    )


def _problem(text: str) -> Problem:
    location, _, message = text.partition(": ")
    return Problem(location, message)


def quarantined_rows(
    saver: CortexSaver, thread_id: str
) -> tuple[tuple[QuarantinedRow, ...], tuple[Problem, ...]]:
    """The rows a forensic import quarantined in a thread, and the orphans it reported.

    Raises:
        UnknownThread: no such thread.
    """
    config = thread_config(thread_id)
    if saver.inner.get_tuple(config) is None:
        raise UnknownThread(thread_id)
    for tup in saver.inner.list(config, filter={"step": -1}):
        metadata: dict[str, Any] = dict(tup.metadata or {})
        if _QUARANTINE in metadata:
            rows = tuple(
                QuarantinedRow(
                    r["location"], r["category"], tuple(map(_problem, r["problems"])), r["row"]
                )
                for r in metadata[_QUARANTINE]
            )
            orphans = tuple(Problem(o["location"], o["message"]) for o in metadata[_ORPHANS])
            return rows, orphans
    return (), ()
