"""Probes of issue 23, items 2-4: degree scaling, the largest value's round trip, event size.

Each returns ``{figure: value}`` (the zero-goal figures :mod:`reliability` reports per
backend) and ``details``:

* **degree** — a star of N nodes (every edge into one hub, ``in``, or out of it, ``out``)
  as a snapshot file, through ``validate FILE``, ``import``, ``validate DB --thread``,
  ``memory query`` (the hub's 100k-node cone) and ``export``, each a fresh
  ``cortex-agents`` process. ``degree_over_bound``: runs whose CPU time (user + system
  of the command's process; on Postgres the server's own work is not in it, the wall
  time is reported beside it) exceeds the bound — 10 s at N = 100,000 in full mode;
  ``degree_failures``: commands that failed, or an export that is not the imported file
  byte for byte; ``degree_superlinear``: shapes whose fold costs more than 12x the
  operations at N than at N/10 (linear: 10x; the old fold at 100k fan-out: ~100x).
* **limits** — the largest output a run may store (a string of ``MAX_STRING_CHARS``
  characters, nesting ``MAX_DEPTH`` levels, the largest integer) is run, exported,
  validated, imported, validated again and exported again: ``limits_refused`` counts
  the steps that refused it or changed it; values one step over each bound are run:
  ``limits_stored_over`` counts those the run stored.
* **events** — calls with many unknown fields of 4,000 emoji each, to every tool,
  through the real tool loop; then every journaled ``tool_call_made`` of the database
  (R3's too): ``event_over_cap`` counts events over 16,384 bytes as stored.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cortex_agents._timestamps import parse_timestamp
from cortex_agents.persistence import open_saver
from cortex_agents.persistence._store import encode_event
from cortex_agents.runtime import Runtime, WireBuilder
from cortex_agents.snapshotfile import SnapshotDocument, dump_snapshot
from cortex_agents.substrate import (
    EdgeAdded,
    EdgeRecord,
    NodeRecord,
    NodeScheduled,
    ToolCallMade,
    fold,
)
from cortex_agents.substrate._bounds import MAX_STRING_CHARS
from cortex_agents.substrate._events import MAX_DEPTH
from cortex_agents.tools._journal import MAX_EVENT_BYTES

SHAPES = ("in", "out")


def _at(text: str) -> Any:
    return parse_timestamp(text, "at")


def star_document(degree: int, shape: str) -> SnapshotDocument:
    """A hub and ``degree - 1`` completed leaves, every edge into the hub or out of it."""
    hour = "00" if shape == "in" else "02"  # a leaf completes before the hub it feeds, or after
    hub = NodeRecord(
        id="hub",
        kind="merge",
        status="completed",
        captured_at=_at("2026-01-01T01:00:00Z"),
        completed_at=_at("2026-01-01T01:30:00Z"),
        output={"contract": "merge", "value": {"finding": "the hub"}},
        attempts=1,
    )
    leaves = [
        NodeRecord(
            id=f"leaf-{i:06d}",
            kind="analyst",
            status="completed",
            captured_at=_at(f"2026-01-01T{hour}:00:00Z"),
            completed_at=_at(f"2026-01-01T{hour}:30:00Z"),
            output={
                "contract": "analysis",
                "value": {"claim_ref": f"c{i}", "finding": f"finding {i} in trial {i % 97}"},
            },
            attempts=1,
        )
        for i in range(degree - 1)
    ]
    edges = [
        EdgeRecord(leaf.id, hub.id) if shape == "in" else EdgeRecord(hub.id, leaf.id)
        for leaf in leaves
    ]
    return SnapshotDocument(
        run_id=f"star-{shape}",
        entry_time=_at("2026-01-01T03:00:00Z"),
        nodes=(hub, *leaves),
        edges=tuple(edges),
    )


def _command(args: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """``(exit code, CPU s, wall s, stderr tail)`` of one ``cortex-agents`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cortex_agents", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "LANGSMITH_TRACING": "false"},
        check=False,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, round(cpu, 2), round(wall, 2), done.stderr[-600:]


class _Counted(str):
    """A node id that counts the hashes and comparisons made of it."""

    __slots__ = ()
    ops = 0

    def __hash__(self) -> int:
        _Counted.ops += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        _Counted.ops += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        _Counted.ops += 1
        return str.__ne__(self, other)


def fold_operations(degree: int, shape: str) -> int:
    """Hashes and comparisons of node ids while folding a star of ``degree`` edges at once."""
    at = _at("2026-01-01T00:00:00Z")
    hub = _Counted("hub")
    leaves = [_Counted(f"leaf-{i}") for i in range(degree)]
    events: list[Any] = [NodeScheduled(node_id=n, kind="k", at=at) for n in (hub, *leaves)]
    events += [
        EdgeAdded(source=leaf, target=hub, at=at)
        if shape == "in"
        else EdgeAdded(source=hub, target=leaf, at=at)
        for leaf in leaves
    ]
    _Counted.ops = 0
    fold(events)
    return _Counted.ops


def degree(db: str, workdir: Path, nodes: int, bound_s: float) -> dict[str, Any]:
    """The degree probe on one database (see the module docstring)."""
    seconds: dict[str, dict[str, dict[str, float]]] = {}
    over = failures = superlinear = 0
    problems: list[str] = []
    load = [os.getloadavg()[0]]
    for shape in SHAPES:
        source = workdir / f"star-{shape}.json"
        source.write_text(dump_snapshot(star_document(nodes, shape)), encoding="utf-8")
        exported = workdir / f"star-{shape}-exported.json"
        thread = f"star-{shape}"
        direction = "ancestors" if shape == "in" else "descendants"  # the hub's whole cone
        query = ["--origin", "hub", "--direction", direction, "--text", "finding 7 trial", "--limit", "5"]  # fmt: skip
        commands = {
            "validate_file": ["validate", str(source)],
            "import": ["import", str(source), db, "--thread", thread],
            "validate_thread": ["validate", db, "--thread", thread],
            "query": ["memory", "query", db, "--thread", thread, *query],
            "export": ["export", db, "--thread", thread, "-o", str(exported)],
        }
        seconds[shape] = {}
        for name, args in commands.items():
            code, cpu, wall, err = _command(args, workdir)
            seconds[shape][name] = {"cpu": cpu, "wall": wall}
            if code != 0:
                failures += 1
                problems.append(f"{shape}/{name}: exit {code}: {err}")
            over += cpu > bound_s
        if exported.read_bytes() != source.read_bytes():
            failures += 1
            problems.append(f"{shape}: the export is not the imported file byte for byte")
        small, large = fold_operations(nodes // 10, shape), fold_operations(nodes, shape)
        seconds[shape]["fold_operations"] = {"at_tenth": small, "at_full": large}
        superlinear += large > 12 * small
    load.append(os.getloadavg()[0])
    return {
        "degree_over_bound": over,
        "degree_failures": failures,
        "degree_superlinear": superlinear,
        "details": {
            "nodes": nodes,
            "bound_cpu_s": bound_s,
            "seconds": seconds,
            "loadavg_1m_before_after": load,
            "problems": problems[:6],
        },
    }


# -- the largest value a run stores ----------------------------------------------------------


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def _largest() -> dict[str, Any]:
    """An output at every bound: the longest string, the deepest nesting, the largest integer."""
    return {
        "text": "x" * MAX_STRING_CHARS,
        "deep": _nested(MAX_DEPTH - 1),  # the output itself is the first level
        "wide": "\N{GRINNING FACE}" * MAX_STRING_CHARS,  # 4 MB of UTF-8: characters count
        "n": 2**63 - 1,
        "f": 1.7976931348623157e308,
    }


OVER = {
    "string": lambda: {"text": "x" * (MAX_STRING_CHARS + 1)},
    "key": lambda: {"k" * (MAX_STRING_CHARS + 1): 1},
    "depth": lambda: {"deep": _nested(MAX_DEPTH)},
    "integer": lambda: {"n": 2**63},
}


def _wire(outputs: dict[str, Any]):
    builder = WireBuilder("limits")
    for name, make in outputs.items():
        builder = builder.kind(name, lambda ctx, make=make: make()).stage(name, name)
    return builder.on_failure("continue").build()


def limits(db: str, workdir: Path, cli: Any) -> dict[str, Any]:
    """The largest value's round trip and the values just over, on one database."""
    refused: list[str] = []
    with open_saver(db) as saver:
        Runtime(_wire({"largest": _largest}), saver).run("largest")
        over = Runtime(_wire(OVER), saver).run("over")
    if dict(over.failures).keys() != OVER.keys():
        stored_over = sorted(set(OVER) - set(dict(over.failures)))
    else:
        stored_over = []
    first, second = workdir / "largest.json", workdir / "largest-again.json"
    steps = [
        ("export", ["export", db, "--thread", "largest", "-o", first]),
        ("validate_file", ["validate", first]),
        ("import", ["import", first, db, "--thread", "largest-copy"]),
        ("validate_thread", ["validate", db, "--thread", "largest-copy"]),
        ("export_again", ["export", db, "--thread", "largest-copy", "-o", second]),
    ]
    for name, args in steps:
        code, _, output = cli(*args)
        if code != 0:
            refused.append(f"{name}: {output[-300:]}")
    if not refused:
        if second.read_bytes() != first.read_bytes():
            refused.append("the re-export differs from the export")
        data = json.loads(first.read_text(encoding="utf-8"))
        (node,) = [n for n in data["nodes"] if n["id"] == "largest"]
        if node["output"] != json.loads(json.dumps(_largest())):
            refused.append("the exported output differs from the run's")
    return {
        "limits_refused": len(refused),
        "limits_stored_over": len(stored_over),
        "details": {"refused": refused[:4], "stored_over": stored_over},
    }


# -- the journaled event --------------------------------------------------------------------


def unknown_fields(tool: str, fields: int) -> str:
    """``arguments`` of a call with ``fields`` unknown fields of 4,000 emoji each."""
    return json.dumps({f"unknown_{i}": "\N{GRINNING FACE}" * 4000 for i in range(fields)})


def events(db: str, probes: Any) -> dict[str, Any]:
    """Journal many-unknown-fields calls to every tool, then size every journaled call in ``db``."""
    from cortex_agents.scratch import open_scratch

    errors: list[str] = []
    with open_saver(db) as saver, open_scratch(db) as scratch:
        runtime = Runtime(probes.fuzz_wire(), saver, scratch=scratch, lock_timeout=None)
        for tool in probes.TOOLS:
            arguments = [unknown_fields(tool, n) for n in (1, 20, 200)]
            probes._run_batch(runtime, f"unknown-fields-{tool}", tool, arguments, errors)
        sizes = []
        for thread in saver.store.threads():
            log = saver.substrate({"configurable": {"thread_id": thread}})
            sizes += [
                len(encode_event(e).encode("utf-8"))
                for e in log or ()
                if isinstance(e, ToolCallMade)
            ]
    return {
        "event_over_cap": sum(size > MAX_EVENT_BYTES for size in sizes),
        "details": {"events": len(sizes), "max_bytes": max(sizes, default=0), "errors": errors[:3]},
    }
