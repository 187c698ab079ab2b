#!/usr/bin/env python3
"""Hash every column of the memory index and its default fields, to compare two versions of the code.

Builds the index of ``tools/bench_memory.py``'s workflow DAG twice — from the
snapshot made by hand (``MemoryIndex.of_records``) and from the same graph as
one batch of events (what a branch read back after a restart takes in) — and
prints one short SHA-256 per column, list and field (the token postings
included), and whether equal bodies share one string. Run it on two
checkouts and ``diff`` the outputs: a change that keeps the index bit-exact
prints the same lines. The CPU time of each build goes to stderr.

    python tools/index_hashes.py --nodes 300000 > this.txt
    PYTHONPATH=/path/to/main python /path/to/main/tools/index_hashes.py --nodes 300000 > main.txt
    diff main.txt this.txt

Edge lists are read through ``MemoryIndex.edge_list`` where the code has it,
else through the per-node lists older versions kept (``index.out`` / ``index.inc``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_memory

from cortex_agents.memory import MemorySnapshot, default_extractor
from cortex_agents.memory._bulk import paused_gc
from cortex_agents.memory._fields import fields_index, fields_of
from cortex_agents.memory._index import MemoryIndex
from cortex_agents.substrate import EdgeAdded, Event, NodeScheduled, StageCompleted, StageStarted

_LISTS = ("ids", "kind_lookup", "kind_names", "ready", "src", "dst", "removed")
_MORE = ("removal_ticks", "removal_edges", "live_edges", "length")
_COLUMNS = (
    *("kinds", "scheduled", "captured_us", "completed_us", "completed_tick", "settled_tick"),
    *("output_tick", "ready_tick", "src_col", "dst_col", "edge_tick", "removed_tick"),
)
_FIELD_LISTS = ("routing_keys", "bodies", "evidence", "projected", "body_texts", "done", "posted")


def digest(value: Any) -> str:
    """A short SHA-256 of an array's bytes and dtype, or of a value's ``repr``."""
    if isinstance(value, np.ndarray):
        data = value.tobytes() + str(value.dtype).encode()
    else:
        data = repr(value).encode()
    return hashlib.sha256(data).hexdigest()[:12]


def edge_lists(index: MemoryIndex, relation: str) -> list[list[int]]:
    """Every node's edge ordinals out (``"out"``) or in (``"in"``), in order."""
    if hasattr(index, "edge_list"):
        return [index.edge_list(relation, u) for u in range(len(index.ids))]
    return [list(edges) for edges in (index.out if relation == "out" else index.inc)]


def describe(index: MemoryIndex) -> dict[str, Any]:
    """A digest per column, list and default field of ``index``."""
    found: dict[str, Any] = {name: digest(getattr(index, name)) for name in (*_LISTS, *_MORE)}
    found["pos"] = digest(sorted(index.pos.items()))
    for name in _COLUMNS:
        found[name] = digest(getattr(index, name).prefix())
    n = len(index.ids)
    found["labels"] = digest(index.order.labels[:n])
    found["sorted"] = digest(index.order._sorted)
    found["sorted_at"] = digest(index.order._sorted_at)
    for name in ("value", "since", "prev_value", "prev_since"):
        found[f"depth.{name}"] = digest(getattr(index.depths, name).prefix())
    found["depth.history"] = digest(index.depths.history)
    found["outputs"] = digest(index.outputs)
    found["out"] = digest(edge_lists(index, "out"))
    found["inc"] = digest(edge_lists(index, "in"))
    fields = fields_index(index, default_extractor)
    with index.lock:
        fields.token_postings(index)
    for name in _FIELD_LISTS:
        found[f"f.{name}"] = digest(getattr(fields, name))
    found["f.routing_lookup"] = digest(list(fields.routing_lookup.items()))
    found["f.body_lookup"] = digest(list(fields.body_lookup.items()))
    found["f.vocabulary"] = digest(list(fields.vocabulary.items()))
    found["f.postings"] = digest([posting.prefix().tolist() for posting in fields.postings])
    for name in ("routing", "counts", "body_ids"):
        found[f"f.{name}"] = digest(getattr(fields, name).prefix())
    ids = fields.body_ids.prefix().tolist()
    found["f.one_string_per_body"] = all(
        body is fields.body_texts[j] for body, j in zip(fields.bodies, ids, strict=True) if j >= 0
    )
    return found


def as_events(snapshot: MemorySnapshot) -> list[Event]:
    """The snapshot's graph as a run's events: every node scheduled, every edge, every output."""
    nodes = snapshot.nodes
    events: list[Event] = [
        NodeScheduled(node_id=node.id, kind=node.kind, at=node.captured_at)
        for node in nodes.values()
    ]
    events += [
        EdgeAdded(source=edge.source, target=edge.target, at=nodes[edge.target].captured_at)
        for edge in snapshot.edges
    ]
    for node in nodes.values():
        events.append(StageStarted(node_id=node.id, at=node.captured_at))
        events.append(StageCompleted(node_id=node.id, at=node.completed_at, output=node.output))
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000, help="workflow DAG size")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    snapshot, _ = bench_memory.workflow_dag(args.nodes, args.seed)
    start = time.process_time()
    view = snapshot.index
    fields_of(view, default_extractor)
    built = time.process_time() - start
    from_snapshot = describe(view.index)
    events = as_events(snapshot)
    index = MemoryIndex()
    start = time.process_time()
    with paused_gc():
        index._take(events, snapshot)  # as the state: `_take` reads its records' outputs
    index.length = len(events)
    fields_index(index, default_extractor)
    taken = time.process_time() - start
    from_events = describe(index)
    print(
        f"CPU: snapshot build {built * 1e3:.0f} ms, event batch {taken * 1e3:.0f} ms",
        file=sys.stderr,
    )
    for label, found in (("snapshot", from_snapshot), ("events", from_events)):
        for name in sorted(found):
            print(label, name, found[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
