"""Reading and writing snapshot files: validate, parse, salvage, load, dump, write.

Every reading goes through :func:`._reader.read_text`, so ``validate``,
strict import and forensic import accept exactly the same files. Writing is
canonical: nodes in canonical topological order, edges by their endpoints'
positions, fixed key order, two-space indent, UTF-8, one trailing newline.
Parsing then dumping a canonical file reproduces it byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cortex_agents._timestamps import format_timestamp
from cortex_agents.errors import InvalidSnapshot, Problem
from cortex_agents.memory._influence import canonical_order
from cortex_agents.snapshotfile._document import (
    SCHEMA_VERSION,
    SQLITE_HEADER,
    Salvage,
    SnapshotDocument,
)
from cortex_agents.snapshotfile._limits import DEFAULT_LIMITS, SnapshotLimits
from cortex_agents.snapshotfile._reader import Reading, read_text
from cortex_agents.substrate._records import NodeId, NodeRecord, RewriteFact

__all__ = [
    "checked_dump",
    "dump_snapshot",
    "load_snapshot",
    "load_snapshot_forensic",
    "parse_snapshot",
    "salvage_snapshot",
    "validate_snapshot",
    "write_snapshot",
]


def _read(text: str | bytes, limits: SnapshotLimits, *, dumped: bool = False) -> Reading:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Reading(problems=[Problem(f"byte {exc.start}", "file is not UTF-8")])
    return read_text(text, limits, dumped=dumped)


def validate_snapshot(
    text: str | bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS, dumped: bool = False
) -> list[Problem]:
    """Every problem of a snapshot file's text; empty exactly when strict import accepts it.

    ``dumped``: the text is :func:`dump_snapshot`'s (an export being checked):
    what only a hand-written text can hold is not looked for.
    """
    return _read(text, limits, dumped=dumped).problems


def parse_snapshot(
    text: str | bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS
) -> SnapshotDocument:
    """Parse and validate a snapshot file's text (strict).

    Raises:
        InvalidSnapshot: with every problem and its location.
    """
    reading = _read(text, limits)
    if reading.document is None or reading.problems:
        raise InvalidSnapshot(reading.problems)
    return reading.document


def salvage_snapshot(text: str | bytes, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> Salvage:
    """The valid rows of a snapshot file, and every other row with why (forensic reading).

    Invalid nodes, dangling or duplicate edges, edges that would close a
    cycle or contradict their endpoints' states, and rewrites of unknown or
    left-out proposers are left out, and returned.

    Raises:
        InvalidSnapshot: nothing can be interpreted (malformed JSON, out of
            bounds, unknown schema version, wrong top-level fields, bad
            ``entry_time``, no valid node).
    """
    reading = _read(text, limits)
    if reading.document is None:
        raise InvalidSnapshot(reading.problems)
    return Salvage(
        document=reading.document,
        problems=tuple(reading.problems),
        left_out=tuple(reading.left_out),
        orphans=tuple(reading.orphans),
    )


def _read_file(path: str | Path, limits: SnapshotLimits) -> str:
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(limits.max_bytes + 1)
    except OSError as exc:
        raise InvalidSnapshot([Problem(str(path), f"cannot read file: {exc.strerror}")]) from None
    if len(raw) > limits.max_bytes:
        raise InvalidSnapshot(
            [Problem(str(path), f"is larger than {limits.max_bytes} bytes, the limit")]
        )
    if raw.startswith(SQLITE_HEADER):
        raise InvalidSnapshot(
            [
                Problem(
                    str(path),
                    "is a SQLite database, not a snapshot file (JSON)",
                )
            ]
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidSnapshot([Problem(f"byte {exc.start}", "file is not UTF-8")]) from None


def load_snapshot(path: str | Path, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> SnapshotDocument:
    """Read and validate a snapshot file (strict).

    Raises:
        InvalidSnapshot: the file is missing, unreadable or invalid.
    """
    return parse_snapshot(_read_file(path, limits), limits=limits)


def load_snapshot_forensic(path: str | Path, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> Salvage:
    """Read a snapshot file, keeping its valid rows (see :func:`salvage_snapshot`)."""
    return salvage_snapshot(_read_file(path, limits), limits=limits)


def _node_json(node: NodeRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": node.id,
        "kind": node.kind,
        "status": node.status,
        "captured_at": format_timestamp(node.captured_at),
        "completed_at": format_timestamp(node.completed_at) if node.completed_at else None,
        "output": node.output,
        "tags": list(node.tags),
    }
    # optional keys, in this order, only when set (a hot loop of a large export)
    if node.error is not None:
        out["error"] = node.error
    if node.attempts:
        out["attempts"] = node.attempts
    if node.config:
        out["config"] = dict(node.config)
    return out


def _rewrite_json(fact: RewriteFact) -> dict[str, Any]:
    return {
        "rewrite_id": fact.rewrite_id,
        "proposer": fact.proposer,
        "decision": fact.decision,
        "code": fact.code,
        "reason": fact.reason,
        "proposal": dict(fact.proposal),
        "cost": dict(fact.cost),
        "budget_before": dict(fact.budget_before),
        "budget_after": dict(fact.budget_after),
        "diff": dict(fact.diff),
        **({"check": fact.check} if fact.check is not None else {}),
        **({"key": fact.key} if fact.key is not None else {}),
    }


def dump_snapshot(document: SnapshotDocument) -> str:
    """The canonical JSON text of a snapshot document.

    Raises:
        CycleError: the document's edges are not a DAG.
        ValueError: an output holds a value JSON cannot represent (NaN, ...).
    """
    relation: dict[NodeId, list[NodeId]] = {node.id: [] for node in document.nodes}
    for edge in document.edges:
        relation[edge.source].append(edge.target)
    order = canonical_order(relation)
    position = {node_id: i for i, node_id in enumerate(order)}
    by_id = {node.id: node for node in document.nodes}
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": document.run_id,
        "entry_time": format_timestamp(document.entry_time),
        "nodes": [_node_json(by_id[node_id]) for node_id in order],
        "edges": [
            {"source": e.source, "target": e.target}
            for e in sorted(document.edges, key=lambda e: (position[e.source], position[e.target]))
        ],
        "rewrites": [_rewrite_json(fact) for fact in document.rewrites],
    }
    if document.rewrite_budget is not None:  # only runs that set one: other files stay as they were
        payload["rewrite_budget"] = dict(sorted(document.rewrite_budget.items()))
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def checked_dump(document: SnapshotDocument, *, limits: SnapshotLimits = DEFAULT_LIMITS) -> str:
    """The canonical JSON text of ``document``, read back by the reader ``import`` uses.

    What a run stores keeps within the bounds of a value, but a whole thread
    can outgrow a file (more nodes or bytes than one may hold), and a
    database written before a bound existed can hold a value over it: the
    text is checked, so a file written from it is one ``import`` accepts.

    Raises:
        InvalidSnapshot: ``import`` would refuse the text; every problem, located.
        CycleError: as :func:`dump_snapshot`.
        ValueError: as :func:`dump_snapshot`.
    """
    text = dump_snapshot(document)
    problems = validate_snapshot(text, limits=limits, dumped=True)
    if problems:
        raise InvalidSnapshot(problems)
    return text


def write_snapshot(document: SnapshotDocument, path: str | Path) -> None:
    """Write the canonical JSON of ``document`` to ``path`` (UTF-8), if ``import`` accepts it.

    Raises:
        InvalidSnapshot: ``import`` would refuse the file (see :func:`checked_dump`);
            nothing is written.
    """
    Path(path).write_text(checked_dump(document), encoding="utf-8")
