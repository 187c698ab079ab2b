"""Case files: labelled retrieval queries in the snapshot format, read and checked.

A case file is a JSON list of objects::

    {"snapshot": <a snapshot file's JSON, DESIGN §8>, "origin": "<node id>",
     "query": "<text>", "relevant": ["<node id>", ...]}

Extra keys (``family``, ``split``, ``name``, ...) are kept as labels.
A file is rejected whole, naming the location, when a snapshot is invalid,
the origin or a relevant id is not a node of its snapshot, ``relevant`` is
empty or names the origin, or the query is not a non-empty string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex_agents.errors import InvalidArgument, InvalidSnapshot
from cortex_agents.memory._snapshot import MemorySnapshot
from cortex_agents.snapshotfile import parse_snapshot

__all__ = ["LoadedCase", "load_cases", "read_cases"]


@dataclass(frozen=True, slots=True)
class LoadedCase:
    """A checked case, with its snapshot built.

    Attributes:
        snapshot: The memory snapshot, referenced at the file's ``entry_time``.
        origin: The node whose memory is queried.
        query: The question.
        relevant: The nodes that answer it.
        family: Its ``family`` label (``"all"`` when it has none).
        name: Its ``name`` label, else ``cases[i]``.
    """

    snapshot: MemorySnapshot
    origin: str
    query: str
    relevant: tuple[str, ...]
    family: str
    name: str


def _check(i: int, item: Any) -> LoadedCase:
    where = f"cases[{i}]"
    if not isinstance(item, dict):
        raise InvalidArgument(
            where, "must be an object with snapshot, origin, query, relevant", type(item).__name__
        )
    for key in ("snapshot", "origin", "query", "relevant"):
        if key not in item:
            raise InvalidArgument(f"{where}.{key}", "is required", None)
    try:
        # Serialized again so the embedded snapshot meets the same parser, and the
        # same rules, as a snapshot file on disk.
        document = parse_snapshot(json.dumps(item["snapshot"]))
    except InvalidSnapshot as exc:
        first = exc.problems[0] if exc.problems else None
        raise InvalidArgument(
            f"{where}.snapshot", f"is not a valid snapshot: {first}", None
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{where}.snapshot", f"is not JSON: {exc}", None) from None
    ids = {node.id for node in document.nodes}
    origin, query, relevant = item["origin"], item["query"], item["relevant"]
    if not isinstance(origin, str) or origin not in ids:
        raise InvalidArgument(f"{where}.origin", "must be a node id of its snapshot", origin)
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument(f"{where}.query", "must be a non-empty string", query)
    if not isinstance(relevant, list) or not relevant:
        raise InvalidArgument(f"{where}.relevant", "must be a non-empty list of node ids", relevant)
    for j, node_id in enumerate(relevant):
        if not isinstance(node_id, str) or node_id not in ids:
            raise InvalidArgument(
                f"{where}.relevant[{j}]", "must be a node id of its snapshot", node_id
            )
        if node_id == origin:
            raise InvalidArgument(f"{where}.relevant[{j}]", "must not be the origin", node_id)
    return LoadedCase(
        document.to_memory_snapshot(),
        origin,
        query,
        # Deduplicated in order: a repeated id would count twice in recall's denominator.
        tuple(dict.fromkeys(relevant)),
        str(item.get("family", "all")),
        str(item.get("name", where)),
    )


def read_cases(items: Any) -> list[LoadedCase]:
    """Check and build the cases of an already-parsed case file.

    Raises:
        InvalidArgument: the first problem, with its location (``cases[3].relevant[0]``).
    """
    if not isinstance(items, list) or not items:
        raise InvalidArgument("cases", "must be a non-empty JSON list", type(items).__name__)
    return [_check(i, item) for i, item in enumerate(items)]


def load_cases(path: str | Path) -> list[LoadedCase]:
    """Read and check a case file.

    Raises:
        InvalidArgument: unreadable, not JSON, or a case breaks a rule (with its location).
    """
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument(
            "--cases", f"cannot be read: {exc.strerror or exc}", str(path)
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            "--cases", f"is not JSON: line {exc.lineno} column {exc.colno}", str(path)
        ) from None
    return read_cases(items)
