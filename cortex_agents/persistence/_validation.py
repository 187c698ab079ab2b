"""Validate a stored thread (seed 004's ``validate_graph``), with the same located report as a file.

:func:`validate_thread` reads a thread at its latest checkpoint and reports
(:func:`stored_threads` names every thread it accepts):

* what stops it being read at all — missing or damaged substrate rows, an
  event log that does not fold (location ``substrate``), a SQLite file that
  fails its integrity check (location ``database``);
* everything a snapshot file of it would be refused for — its export is read
  by the very reader ``validate FILE`` and ``import`` use, so the locations
  are a file's (``nodes[3].attempts``, ``edges[8]``) and a thread is valid
  exactly when its export imports;
* the rows a forensic import quarantined in it (dangling edges, cycles,
  orphans, invalid rows), with their locations in the imported file, and the
  nodes it left without edges (orphans).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from cortex_agents.errors import CortexError, Problem
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._transactions import driver_errors, is_driver_error, storage_error
from cortex_agents.persistence._transfer import (
    QuarantinedRow,
    UnknownThread,
    export_document,
    quarantined_rows,
    thread_config,
)
from cortex_agents.snapshotfile import dump_snapshot, validate_snapshot

__all__ = ["ThreadReport", "stored_threads", "validate_thread"]


@dataclass(frozen=True, slots=True)
class ThreadReport:
    """What validating a stored thread found.

    Attributes:
        thread_id: The thread.
        nodes: Nodes in its graph (``None`` when it could not be read).
        edges: Edges in its graph (``None`` when it could not be read).
        problems: Every problem, located.
        quarantined: Rows a forensic import kept in the thread, out of its graph.
        orphans: Nodes left without any edge by the forensic import.
    """

    thread_id: str
    nodes: int | None
    edges: int | None
    problems: tuple[Problem, ...] = ()
    quarantined: tuple[QuarantinedRow, ...] = ()
    orphans: tuple[Problem, ...] = ()

    @property
    def valid(self) -> bool:
        """No problem and nothing quarantined."""
        return not self.problems and not self.quarantined

    def report(self) -> list[Problem]:
        """One located line per problem and per quarantined row (orphans are notes)."""
        lines = list(self.problems)
        for row in self.quarantined:
            for problem in row.problems:
                lines.append(
                    Problem(
                        problem.location,
                        f"quarantined ({row.category}): {problem.message}",
                    )
                )
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "thread_id": self.thread_id,
            "valid": self.valid,
            "nodes": self.nodes,
            "edges": self.edges,
            "problems": [str(p) for p in self.problems],
            "quarantined": [row.to_dict() for row in self.quarantined],
            "orphans": [str(p) for p in self.orphans],
        }


def _sqlite_integrity(saver: CortexSaver) -> list[Problem]:
    conn = getattr(saver.store, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return []
    with driver_errors("integrity check"):
        # quick_check skips matching each index's entries to their rows (O(N), where
        # integrity_check is O(N log N)); 20 caps the lines a damaged file reports, as below.
        found = [r[0] for r in conn.execute("PRAGMA quick_check(20)").fetchall()]
        keys = conn.execute("PRAGMA foreign_key_check").fetchall()
    problems = [Problem("database", f"integrity check: {line}") for line in found if line != "ok"]
    problems += [
        Problem("database", f"foreign key check: a row of {table} references a missing {parent}")
        for table, _, parent, _ in keys[:20]
    ]
    return problems


def validate_thread(saver: CortexSaver, thread_id: str) -> ThreadReport:
    """Validate a stored thread (see the module docstring).

    Raises:
        UnknownThread: the thread has no checkpoint with a substrate.
    """
    problems = _sqlite_integrity(saver)
    if saver.inner.get_tuple(thread_config(thread_id)) is None:  # exists, read or not
        raise UnknownThread(thread_id)
    try:
        document = export_document(saver, thread_id)
        text = dump_snapshot(document)
    except UnknownThread:
        raise
    except (CortexError, ValueError) as exc:
        problems.append(Problem("substrate", f"cannot be read: {exc}"))
        return ThreadReport(thread_id, None, None, tuple(problems))
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        problems.append(Problem("substrate", f"cannot be read: {storage_error(exc)}"))
        return ThreadReport(thread_id, None, None, tuple(problems))
    problems += validate_snapshot(text, dumped=True)
    quarantined, orphans = quarantined_rows(saver, thread_id)
    return ThreadReport(
        thread_id,
        len(document.nodes),
        len(document.edges),
        tuple(problems),
        quarantined,
        orphans,
    )


def stored_threads(saver: CortexSaver) -> list[str]:
    """Every thread :func:`validate_thread` accepts: substrate rows and a checkpoint (code-point order)."""
    return [t for t in saver.store.threads() if saver.inner.get_tuple(thread_config(t)) is not None]
