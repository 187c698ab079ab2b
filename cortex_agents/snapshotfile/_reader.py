"""Reading a snapshot file's text: every problem located, every row accounted for.

One reader serves ``validate``, strict ``import`` and forensic ``import``,
so they accept exactly the same files. It works in passes, each on rows that
passed the ones before:

1. the text, within :class:`~cortex_agents.snapshotfile.SnapshotLimits`
   (size, depth, number literals, duplicate keys);
2. the top-level fields and counts (a problem here leaves nothing to read);
3. each node, edge and rewrite on its own: bounds, types, ids, timestamps,
   and the states a run can produce (``completed`` iff ``completed_at``,
   attempts, output and error only where a run records them);
4. the graph: dangling and duplicate edges, cycles, edges that contradict
   their endpoints' states, rewrite history;
5. a last check that the document folds into a substrate exactly as import
   will fold it.

A row with a problem is *left out* of the document, with its category and
the row itself (forensic import keeps it, marked, in the thread). Nodes that
lose every edge that way are reported as orphans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from cortex_agents._timestamps import parse_timestamp
from cortex_agents.errors import CortexError, InvalidArgument, Problem
from cortex_agents.rewrite._budget import budget_problems
from cortex_agents.snapshotfile._document import SCHEMA_VERSION, LeftOut, SnapshotDocument
from cortex_agents.snapshotfile._events import document_events, event_count
from cortex_agents.snapshotfile._integrity import (
    Category,
    IndexedEdge,
    back_edges,
    edge_state_problem,
    rewrite_problem,
)
from cortex_agents.snapshotfile._limits import (
    SnapshotLimits,
    decode_bounded,
    identifier_problem,
    walk_problems,
)
from cortex_agents.substrate._events import storable_json
from cortex_agents.substrate._fold import fold
from cortex_agents.substrate._log import SubstrateLog
from cortex_agents.substrate._records import (
    EdgeRecord,
    NodeId,
    NodeRecord,
    NodeStatus,
    RejectionCode,
    RewriteFact,
)

__all__ = ["Reading", "read_text"]

_STARTED = ("running", "completed", "failed")


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
    id: str
    kind: str
    status: NodeStatus
    captured_at: str
    completed_at: str | None = None
    # Any JSON (the text was decoded as JSON; its values are checked by walk_problems and
    # storable_json): validating it as JsonValue walked every output a third time.
    output: Any = None
    tags: list[str] = []
    error: str | None = None
    attempts: Annotated[int, Field(ge=0)] | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # (a `{}` default is deep-copied)


class _Edge(_Strict):
    source: str
    target: str


class _Rewrite(_Strict):
    rewrite_id: Annotated[int, Field(ge=1)] | None
    proposer: str
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


_NODE = TypeAdapter(_Node)
_EDGE = TypeAdapter(_Edge)
_REWRITE = TypeAdapter(_Rewrite)


@dataclass
class Reading:
    """What reading a file's text found.

    Attributes:
        document: The document of every row that passed (``None`` when nothing
            can be interpreted: malformed JSON, unknown schema version, a bad
            top-level field or count).
        problems: Every problem, located, in document order.
        left_out: The rows not in ``document``, each with why.
        orphans: Nodes in ``document`` whose every edge was left out.
    """

    document: SnapshotDocument | None = None
    problems: list[Problem] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    orphans: list[Problem] = field(default_factory=list)


def _where(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "document"


def _pydantic_problems(exc: PydanticValidationError, prefix: str) -> list[Problem]:
    return [Problem(_where(tuple(err["loc"]), prefix), err["msg"]) for err in exc.errors()]


class _Reader:
    def __init__(self, limits: SnapshotLimits) -> None:
        self.limits = limits
        self.reading = Reading()

    # -- bookkeeping ---------------------------------------------------------------------
    def leave_out(self, where: str, row: Any, category: Category, problems: list[Problem]) -> None:
        self.reading.problems += problems
        self.reading.left_out.append(LeftOut(where, category, tuple(problems), row))

    def id_problems(self, values: dict[str, Any], where: str) -> list[Problem]:
        out = []
        for name, value in values.items():
            rule = identifier_problem(value, self.limits)
            if rule is not None:
                out.append(Problem(f"{where}.{name}" if where else name, rule))
        return out

    def timestamp(self, value: str | None, where: str, problems: list[Problem]) -> Any:
        if value is None:
            return None
        try:
            return parse_timestamp(value, where)
        except InvalidArgument as exc:
            shown = value if len(value) <= 40 else value[:40] + "..."
            problems.append(Problem(where, exc.rule + f" (got {shown!r})"))
            return None

    def storable(self, value: Any, where: str, problems: list[Problem]) -> None:
        try:
            storable_json(value, where)
        except InvalidArgument as exc:
            problems.append(Problem(where, exc.rule))

    # -- passes --------------------------------------------------------------------------
    def top(self, data: Any) -> _Document | None:
        problems = self.reading.problems
        if not isinstance(data, dict):
            problems.append(Problem("document", "must be a JSON object"))
            return None
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            rule = "is required" if version is None else f"unknown schema version {version!r}"
            problems.append(Problem("schema_version", f"{rule}; supported: {SCHEMA_VERSION!r}"))
            return None
        rows = ("nodes", "edges", "rewrites")
        scalars = {k: v for k, v in data.items() if k not in rows}
        found = walk_problems(scalars, "", self.limits)
        if found:
            problems += [Problem(p.location.lstrip("."), p.message) for p in found]
            return None
        try:
            doc = _Document.model_validate(data)
        except PydanticValidationError as exc:
            problems += _pydantic_problems(exc, "")
            return None
        limits = self.limits
        for name, count, limit in (
            ("nodes", len(doc.nodes), limits.max_nodes),
            ("edges", len(doc.edges), limits.max_edges),
            ("rewrites", len(doc.rewrites), limits.max_rewrites),
        ):
            if count > limit:
                problems.append(Problem(name, f"holds {count} items; at most {limit} allowed"))
        if not doc.nodes:
            problems.append(Problem("nodes", "must hold at least one node"))
        if doc.run_id is not None:
            problems += self.id_problems({"run_id": doc.run_id}, "")
        if doc.rewrite_budget is not None:
            self.storable(doc.rewrite_budget, "rewrite_budget", problems)
            problems += [Problem(w, rule) for w, rule in budget_problems(doc.rewrite_budget)]
        return None if problems else doc

    def node(self, i: int, raw: Any, first_at: dict[str, int]) -> NodeRecord | None:
        where = f"nodes[{i}]"
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(raw_id, str) and raw_id:
            if raw_id in first_at:
                message = f"duplicate node id {raw_id[:60]!r} (first at nodes[{first_at[raw_id]}])"
                self.leave_out(where, raw, "duplicate", [Problem(f"{where}.id", message)])
                return None
            # registered before the rest is checked: one bad field must not also make
            # every edge of this node "dangling"
            first_at[raw_id] = i
        problems = walk_problems(raw, where, self.limits)
        if problems:
            self.leave_out(where, raw, "invalid", problems)
            return None
        try:
            node = _NODE.validate_python(raw)
        except PydanticValidationError as exc:
            self.leave_out(where, raw, "invalid", _pydantic_problems(exc, where))
            return None
        problems = self.id_problems({"id": node.id, "kind": node.kind}, where)
        if len(node.tags) > self.limits.max_tags:
            problems.append(Problem(f"{where}.tags", f"at most {self.limits.max_tags} tags"))
        for j, tag in enumerate(node.tags):
            problems += self.id_problems({f"tags[{j}]": tag}, where)
        captured = self.timestamp(node.captured_at, f"{where}.captured_at", problems)
        completed = self.timestamp(node.completed_at, f"{where}.completed_at", problems)
        self.storable(node.output, f"{where}.output", problems)
        self.storable(node.config, f"{where}.config", problems)
        attempts = self.state_problems(node, where, problems)
        if captured is not None and completed is not None and completed < captured:
            problems.append(Problem(f"{where}.completed_at", "must not precede `captured_at`"))
        if problems:
            self.leave_out(where, raw, "invalid", problems)
            return None
        return NodeRecord(
            id=NodeId(node.id),
            kind=node.kind,
            status=node.status,
            captured_at=captured,
            completed_at=completed,
            output=node.output,
            tags=tuple(node.tags),
            error=node.error,
            attempts=attempts,
            config=node.config,
        )

    def state_problems(self, node: _Node, where: str, problems: list[Problem]) -> int:
        """The states a run can record; returns the attempts (absent: 1 once started, else 0)."""
        status, started = node.status, node.status in _STARTED
        attempts = node.attempts if node.attempts is not None else int(started)
        if started and attempts < 1:
            problems.append(Problem(f"{where}.attempts", f"must be at least 1 for a {status} node"))
        elif not started and attempts != 0:
            problems.append(Problem(f"{where}.attempts", f"must be 0 for a {status} node"))
        elif attempts > self.limits.max_attempts:
            problems.append(
                Problem(f"{where}.attempts", f"must be at most {self.limits.max_attempts}")
            )
        if (status == "completed") != (node.completed_at is not None):
            rule = (
                "is required for a completed node"
                if status == "completed"
                else f"must be null for a {status} node"
            )
            problems.append(Problem(f"{where}.completed_at", rule))
        if node.output is not None and status != "completed":
            problems.append(Problem(f"{where}.output", f"must be null for a {status} node"))
        if node.error is not None and status != "failed":
            problems.append(Problem(f"{where}.error", f"must be null for a {status} node"))
        return attempts

    def edges(
        self, doc: _Document, nodes: dict[str, NodeRecord], first_at: dict[str, int]
    ) -> list[IndexedEdge]:
        """Edges that pass every check, in file order."""
        candidates: list[IndexedEdge] = []
        seen: dict[tuple[str, str], int] = {}
        for i, raw in enumerate(doc.edges):
            where = f"edges[{i}]"
            problems = walk_problems(raw, where, self.limits)
            if problems:
                self.leave_out(where, raw, "invalid", problems)
                continue
            try:
                edge = _EDGE.validate_python(raw)
            except PydanticValidationError as exc:
                self.leave_out(where, raw, "invalid", _pydantic_problems(exc, where))
                continue
            problems = [
                Problem(f"{where}.{end}", f"unknown node {getattr(edge, end)[:60]!r}")
                for end in ("source", "target")
                if getattr(edge, end) not in first_at
            ]
            pair = (edge.source, edge.target)
            if pair in seen:
                message = f"duplicate edge (first at edges[{seen[pair]}])"
                self.leave_out(where, raw, "duplicate", [*problems, Problem(where, message)])
                continue
            if problems:
                self.leave_out(where, raw, "dangling", problems)
                continue
            seen[pair] = i
            gone = [end for end in pair if end not in nodes]
            if gone:  # the node itself was left out (and reported) already
                shown = ", ".join(f"{g!r} (nodes[{first_at[g]}])" for g in gone)
                message = f"its endpoint {shown} was left out"
                self.reading.left_out.append(
                    LeftOut(where, "dangling", (Problem(where, message),), raw)
                )
                continue
            candidates.append(IndexedEdge(i, edge.source, edge.target))
        cycles = back_edges(list(nodes), candidates)
        kept: list[IndexedEdge] = []
        for candidate in candidates:
            where = f"edges[{candidate.index}]"
            raw = doc.edges[candidate.index]
            if candidate.index in cycles:
                message = f"closes a cycle {cycles[candidate.index]}; edges must form a DAG"
                self.leave_out(where, raw, "cycle", [Problem(where, message)])
                continue
            rule = edge_state_problem(candidate, nodes)
            if rule is not None:
                self.leave_out(where, raw, "inconsistent", [Problem(where, rule)])
                continue
            kept.append(candidate)
        return kept

    def rewrites(
        self, doc: _Document, nodes: dict[str, NodeRecord], first_at: dict[str, int]
    ) -> list[RewriteFact]:
        kept: list[RewriteFact] = []
        last_id, keys = 0, set[str]()
        for i, raw in enumerate(doc.rewrites):
            where = f"rewrites[{i}]"
            problems = walk_problems(raw, where, self.limits)
            if problems:
                self.leave_out(where, raw, "invalid", problems)
                continue
            try:
                rewrite = _REWRITE.validate_python(raw)
            except PydanticValidationError as exc:
                self.leave_out(where, raw, "invalid", _pydantic_problems(exc, where))
                continue
            for name in ("proposal", "cost", "budget_before", "budget_after", "diff"):
                self.storable(getattr(rewrite, name), f"{where}.{name}", problems)
            if problems:
                self.leave_out(where, raw, "invalid", problems)
                continue
            if rewrite.proposer not in nodes:
                known = rewrite.proposer in first_at
                message = (
                    f"its proposer {rewrite.proposer[:60]!r} (nodes[{first_at[rewrite.proposer]}]) was left out"
                    if known
                    else f"unknown node {rewrite.proposer[:60]!r}"
                )
                problem = Problem(f"{where}.proposer", message)
                if known:
                    self.reading.left_out.append(LeftOut(where, "orphan", (problem,), raw))
                else:
                    self.leave_out(where, raw, "orphan", [problem])
                continue
            fact = RewriteFact(**rewrite.model_dump())
            broken = rewrite_problem(fact, nodes, last_id, keys)
            if broken is not None:
                self.leave_out(
                    where, raw, "inconsistent", [Problem(f"{where}.{broken[0]}", broken[1])]
                )
                continue
            if fact.decision == "admitted":
                last_id += 1
            if fact.key is not None:
                keys.add(fact.key)
            kept.append(fact)
        return kept

    def orphans(
        self,
        doc: _Document,
        nodes: dict[str, NodeRecord],
        kept: list[IndexedEdge],
        first_at: dict[str, int],
    ) -> None:
        linked = {end for e in kept for end in (e.source, e.target)}
        named = {
            end
            for raw in doc.edges
            if isinstance(raw, dict)
            for end in (raw.get("source"), raw.get("target"))
            if isinstance(end, str)
        }
        for node_id in nodes:
            if node_id in named and node_id not in linked:
                self.reading.orphans.append(
                    Problem(
                        f"nodes[{first_at[node_id]}]",
                        f"orphan: every edge of {node_id[:60]!r} was left out; it stands alone",
                    )
                )


def read_text(text: str, limits: SnapshotLimits, *, dumped: bool = False) -> Reading:
    """Read a snapshot file's text (see the module docstring).

    ``dumped``: the text is :func:`~cortex_agents.snapshotfile.dump_snapshot`'s
    own (an export being checked), so it holds no duplicate key, no ``NaN``
    and no number a value could not hold: only its size is checked before it
    is decoded (nesting and numbers are the values' own checks, below). Nor
    is it folded at the end: it is the fold of a stored substrate, and the
    passes before are the fold's rules (each of them, row by row); the last
    fold stays for text from outside, and builds the log import writes.
    """
    reader = _Reader(limits)
    reading = reader.reading
    if dumped:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_bytes:
            reading.problems.append(
                Problem("document", f"is {size} bytes; at most {limits.max_bytes} allowed")
            )
            return reading
        data = json.loads(text)
    else:
        data, reading.problems = decode_bounded(text, limits)
    if data is None:
        return reading
    doc = reader.top(data)
    if doc is None:
        return reading
    entry_problems: list[Problem] = []
    entry_time = reader.timestamp(doc.entry_time, "entry_time", entry_problems)
    if entry_problems:
        reading.problems += entry_problems
        return reading
    first_at: dict[str, int] = {}
    nodes: dict[str, NodeRecord] = {}
    for i, raw in enumerate(doc.nodes):
        node = reader.node(i, raw, first_at)
        if node is not None:
            nodes[node.id] = node
    kept = reader.edges(doc, nodes, first_at)
    rewrites = reader.rewrites(doc, nodes, first_at)
    reader.orphans(doc, nodes, kept, first_at)
    document = SnapshotDocument(
        run_id=doc.run_id,
        entry_time=entry_time,
        nodes=tuple(nodes.values()),
        edges=tuple(EdgeRecord(NodeId(e.source), NodeId(e.target)) for e in kept),
        rewrites=tuple(rewrites),
        rewrite_budget=doc.rewrite_budget,
    )
    if not document.nodes:
        reading.problems.append(Problem("nodes", "no node is valid: nothing to import"))
        return reading
    count = event_count(document)
    if count > limits.max_events:
        reading.problems.append(
            Problem("document", f"imports as {count} events; at most {limits.max_events} allowed")
        )
        return reading
    if dumped:
        reading.problems.sort(key=lambda p: _order(p.location))
        reading.document = document
        return reading
    try:  # what import will do with it: fold the events (never expected to fail here)
        events = document_events(document)
        state = fold(events)
    except CortexError as exc:
        reading.problems.append(Problem("document", f"does not fold into a substrate: {exc}"))
        return reading
    reading.problems.sort(key=lambda p: _order(p.location))
    # Every value in these events passed the checks above (ids, strings, storable payloads),
    # which are the ones an appended event gets: import writes this log as it is.
    reading.document = replace(document, _log=SubstrateLog.of_folded(events, state))
    return reading


def _order(location: str) -> tuple[int, int, str]:
    """Document order of a location: top-level fields, then nodes, edges, rewrites by index."""
    section = {"nodes": 1, "edges": 2, "rewrites": 3}
    head, _, rest = location.partition("[")
    if head in section and rest[:1].isdigit():
        return section[head], int(rest.split("]", 1)[0]), location
    return 0, 0, location
