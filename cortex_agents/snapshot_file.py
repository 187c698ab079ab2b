"""The snapshot file (DESIGN §8): JSON that ``export`` writes and ``import`` reads.

::

    {
      "schema_version": "1",
      "run_id": "example",
      "entry_time": "2026-01-01T00:10:00Z",
      "nodes": [{"id": "planner", "kind": "planner", "status": "completed",
                 "captured_at": "...", "completed_at": "...", "output": {...}, "tags": []}],
      "edges": [{"source": "planner", "target": "analyst-a"}],
      "rewrites": []
    }

Reading is strict and reports *every* problem with its location (a JSON path
like ``nodes[3].captured_at``, or a line and column for malformed JSON):
unknown schema version, wrong types, unknown fields, duplicate keys, bad or
naive timestamps, duplicate node ids, dangling or duplicate edges, cycles,
rewrites by unknown proposers.

Writing is canonical: nodes in canonical topological order, edges by their
endpoints' positions, fixed key order, two-space indent, UTF-8, one trailing
newline. Parsing then dumping a canonical file reproduces it byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from cortex_agents.errors import InvalidArgument, InvalidSnapshot, Problem
from cortex_agents.memory.influence import canonical_order
from cortex_agents.memory.snapshot import MemorySnapshot
from cortex_agents.substrate.records import (
    EdgeRecord,
    NodeId,
    NodeRecord,
    NodeStatus,
    RejectionCode,
    RewriteFact,
)
from cortex_agents.substrate.state import GraphState
from cortex_agents.timestamps import format_timestamp, parse_timestamp

__all__ = [
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "SnapshotDocument",
    "dump_snapshot",
    "load_snapshot",
    "load_snapshot_forensic",
    "parse_snapshot",
    "salvage_snapshot",
    "validate_snapshot",
    "write_snapshot",
]

SCHEMA_VERSION: Final = "1"
SQLITE_HEADER: Final = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file (told apart from a snapshot)."""

NonEmpty = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Document(_Strict):
    schema_version: str
    run_id: str | None = None
    entry_time: str
    nodes: list[Any]
    edges: list[Any]
    rewrite_budget: dict[str, Annotated[int, Field(ge=0)]] | None = None
    rewrites: list[Any] = []


class _Node(_Strict):
    id: NonEmpty
    kind: NonEmpty
    status: NodeStatus
    captured_at: str
    completed_at: str | None = None
    output: JsonValue = None
    tags: list[str] = []
    error: str | None = None
    attempts: Annotated[int, Field(ge=0)] = 0
    config: dict[str, JsonValue] = {}


class _Edge(_Strict):
    source: NonEmpty
    target: NonEmpty


class _Rewrite(_Strict):
    rewrite_id: Annotated[int, Field(ge=0)] | None
    proposer: NonEmpty
    proposal: dict[str, JsonValue]
    decision: Literal["admitted", "rejected"]
    code: RejectionCode | None = None
    reason: str | None = None
    cost: dict[str, int] = {}
    budget_before: dict[str, int] = {}
    budget_after: dict[str, int] = {}
    diff: dict[str, JsonValue] = {}
    check: str | None = None
    key: str | None = None


_NODE: Final = TypeAdapter(_Node)
_EDGE: Final = TypeAdapter(_Edge)
_REWRITE: Final = TypeAdapter(_Rewrite)


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotDocument:
    """A validated snapshot file.

    Attributes:
        run_id: The run (thread) it came from, if recorded.
        entry_time: The reference time (a stage's entry, or the export time).
        nodes: Every node.
        edges: Every edge.
        rewrites: The rewrite history, in decision order.
        rewrite_budget: The run's rewrite budget per dimension, if the run
            set one (written to the file only then).
    """

    run_id: str | None
    entry_time: datetime
    nodes: tuple[NodeRecord, ...]
    edges: tuple[EdgeRecord, ...]
    rewrites: tuple[RewriteFact, ...] = ()
    rewrite_budget: Mapping[str, int] | None = None

    def to_memory_snapshot(self) -> MemorySnapshot:
        """The memory snapshot this file describes, referenced at ``entry_time``."""
        return MemorySnapshot.of(self.nodes, self.edges, self.entry_time, run_id=self.run_id)

    @classmethod
    def from_state(
        cls, state: GraphState, entry_time: datetime, *, run_id: str | None = None
    ) -> SnapshotDocument:
        """The document of a materialized graph state."""
        return cls(
            run_id=run_id,
            entry_time=entry_time,
            nodes=tuple(state.nodes.values()),
            edges=state.edges,
            rewrites=state.rewrites,
            rewrite_budget=None if state.budget is None else dict(state.budget),
        )


def _where(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "document"


def _pydantic_problems(exc: PydanticValidationError, prefix: str) -> list[Problem]:
    return [Problem(_where(tuple(err["loc"]), prefix), err["msg"]) for err in exc.errors()]


def _decode(text: str) -> tuple[Any, list[Problem]]:
    problems: list[Problem] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                problems.append(Problem("document", f"duplicate key {key!r} in one JSON object"))
            seen[key] = value
        return seen

    def constant(name: str) -> float:
        problems.append(Problem("document", f"{name} is not valid JSON"))
        return 0.0

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant), problems
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return None, [Problem(where, f"invalid JSON: {exc.msg}")]


def _timestamp(value: str | None, where: str, problems: list[Problem]) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_timestamp(value, where)
    except InvalidArgument as exc:
        problems.append(Problem(where, exc.rule + f" (got {value!r})"))
        return None


def _check(data: Any) -> tuple[SnapshotDocument | None, list[Problem]]:
    """Validate decoded JSON; return the document made of its valid parts, and every problem.

    The document is ``None`` when nothing can be interpreted (not an object,
    unknown schema version, wrong top-level fields, bad ``entry_time``).
    """
    if not isinstance(data, dict):
        return None, [Problem("document", "must be a JSON object")]
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        rule = "is required" if version is None else f"unknown schema version {version!r}"
        return None, [Problem("schema_version", f"{rule}; supported: {SCHEMA_VERSION!r}")]
    try:
        doc = _Document.model_validate(data)
    except PydanticValidationError as exc:
        return None, _pydantic_problems(exc, "")

    problems: list[Problem] = []
    entry_time = _timestamp(doc.entry_time, "entry_time", problems)

    nodes: list[NodeRecord] = []
    first_at: dict[str, int] = {}
    for i, raw in enumerate(doc.nodes):
        where = f"nodes[{i}]"
        # Register the id before the rest is checked, so one bad field does not
        # also make every edge of this node "dangling".
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(raw_id, str) and raw_id:
            if raw_id in first_at:
                problems.append(
                    Problem(
                        f"{where}.id",
                        f"duplicate node id {raw_id!r} (first at nodes[{first_at[raw_id]}])",
                    )
                )
                continue
            first_at[raw_id] = i
        try:
            node = _NODE.validate_python(raw)
        except PydanticValidationError as exc:
            problems += _pydantic_problems(exc, where)
            continue
        captured = _timestamp(node.captured_at, f"{where}.captured_at", problems)
        completed = _timestamp(node.completed_at, f"{where}.completed_at", problems)
        if captured is None:
            continue
        if completed is not None and completed < captured:
            problems.append(Problem(f"{where}.completed_at", "must not precede `captured_at`"))
            continue
        nodes.append(
            NodeRecord(
                id=NodeId(node.id),
                kind=node.kind,
                status=node.status,
                captured_at=captured,
                completed_at=completed,
                output=node.output,
                tags=tuple(node.tags),
                error=node.error,
                attempts=node.attempts,
                config=node.config,
            )
        )

    edges: list[EdgeRecord] = []
    edge_at: dict[tuple[str, str], int] = {}
    successors: dict[str, list[str]] = {}
    kept = {node.id for node in nodes}
    for i, raw in enumerate(doc.edges):
        where = f"edges[{i}]"
        try:
            edge = _EDGE.validate_python(raw)
        except PydanticValidationError as exc:
            problems += _pydantic_problems(exc, where)
            continue
        dangling = [end for end in ("source", "target") if getattr(edge, end) not in first_at]
        for end in dangling:
            problems.append(Problem(f"{where}.{end}", f"unknown node {getattr(edge, end)!r}"))
        pair = (edge.source, edge.target)
        if pair in edge_at:
            problems.append(Problem(where, f"duplicate edge (first at edges[{edge_at[pair]}])"))
            continue
        if dangling:
            continue
        cycle = _path(successors, edge.target, edge.source)
        if cycle is not None:
            loop = " -> ".join([edge.source, *cycle])
            problems.append(Problem(where, f"closes a cycle {loop}; edges must form a DAG"))
            continue
        edge_at[pair] = i
        successors.setdefault(edge.source, []).append(edge.target)
        if edge.source in kept and edge.target in kept:  # both endpoints survived their own checks
            edges.append(EdgeRecord(NodeId(edge.source), NodeId(edge.target)))

    rewrites: list[RewriteFact] = []
    for i, raw in enumerate(doc.rewrites):
        where = f"rewrites[{i}]"
        try:
            rewrite = _REWRITE.validate_python(raw)
        except PydanticValidationError as exc:
            problems += _pydantic_problems(exc, where)
            continue
        if rewrite.proposer not in first_at:
            problems.append(Problem(f"{where}.proposer", f"unknown node {rewrite.proposer!r}"))
        elif rewrite.proposer in kept:
            rewrites.append(RewriteFact(**rewrite.model_dump()))

    if entry_time is None:
        return None, problems
    document = SnapshotDocument(
        run_id=doc.run_id,
        entry_time=entry_time,
        nodes=tuple(nodes),
        edges=tuple(edges),
        rewrites=tuple(rewrites),
        rewrite_budget=doc.rewrite_budget,
    )
    return document, problems


def _path(successors: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """Node ids of a path ``start -> ... -> goal`` (``None`` if there is none)."""
    if start == goal:
        return [goal]
    parent: dict[str, str] = {start: start}
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in sorted(successors.get(node, ())):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            stack.append(nxt)
    return None


def _read(text: str | bytes) -> tuple[SnapshotDocument | None, list[Problem]]:
    data, problems = _decode(text.decode("utf-8") if isinstance(text, bytes) else text)
    if data is None or problems:
        return None, problems
    return _check(data)


def validate_snapshot(text: str | bytes) -> list[Problem]:
    """Every problem of a snapshot file's text; empty when it is valid."""
    return _read(text)[1]


def parse_snapshot(text: str | bytes) -> SnapshotDocument:
    """Parse and validate a snapshot file's text (strict).

    Raises:
        InvalidSnapshot: with every problem and its location.
    """
    document, problems = _read(text)
    if document is None or problems:
        raise InvalidSnapshot(problems)
    return document


def salvage_snapshot(text: str | bytes) -> tuple[SnapshotDocument, list[Problem]]:
    """The valid parts of a snapshot file, and the problems of the rest (forensic reading).

    Invalid nodes, dangling or duplicate edges, edges that would close a
    cycle and rewrites of dropped nodes are left out, and reported.

    Raises:
        InvalidSnapshot: nothing can be interpreted (malformed JSON, unknown
            schema version, wrong top-level fields, bad ``entry_time``).
    """
    document, problems = _read(text)
    if document is None:
        raise InvalidSnapshot(problems)
    return document, problems


def _read_file(path: str | Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidSnapshot([Problem(str(path), f"cannot read file: {exc.strerror}")]) from None
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


def load_snapshot(path: str | Path) -> SnapshotDocument:
    """Read and validate a snapshot file (strict).

    Raises:
        InvalidSnapshot: the file is missing, unreadable or invalid.
    """
    return parse_snapshot(_read_file(path))


def load_snapshot_forensic(path: str | Path) -> tuple[SnapshotDocument, list[Problem]]:
    """Read a snapshot file, keeping its valid parts (see :func:`salvage_snapshot`)."""
    return salvage_snapshot(_read_file(path))


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
    optional: dict[str, tuple[Any, Callable[[Any], bool]]] = {
        "error": (node.error, lambda v: v is not None),
        "attempts": (node.attempts, bool),
        "config": (dict(node.config), bool),
    }
    out.update({key: value for key, (value, keep) in optional.items() if keep(value)})
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
    position = {node_id: i for i, node_id in enumerate(canonical_order(relation))}
    by_id = {node.id: node for node in document.nodes}
    payload = {
        "schema_version": SCHEMA_VERSION,
        "run_id": document.run_id,
        "entry_time": format_timestamp(document.entry_time),
        "nodes": [_node_json(by_id[node_id]) for node_id in sorted(position, key=position.get)],
        "edges": [
            {"source": e.source, "target": e.target}
            for e in sorted(document.edges, key=lambda e: (position[e.source], position[e.target]))
        ],
        "rewrites": [_rewrite_json(fact) for fact in document.rewrites],
    }
    if document.rewrite_budget is not None:  # only runs that set one: other files stay as they were
        payload["rewrite_budget"] = dict(sorted(document.rewrite_budget.items()))
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_snapshot(document: SnapshotDocument, path: str | Path) -> None:
    """Write the canonical JSON of ``document`` to ``path`` (UTF-8)."""
    Path(path).write_text(dump_snapshot(document), encoding="utf-8")
