"""The reliability suite: faults and fuzz against every backend, reported as figures.

    python tools/reliability.py [--full] [--backends sqlite,postgres] [--seed N] [--json]

Per backend (SQLite, Postgres), with the targets of issue 14 (all zero unless said):

* **R1** ``r1_kills``, ``r1_lost_settled``, ``r1_duplicates``, ``r1_equal_final`` —
  ``cortex-agents run`` of a wire of >= 100 stages (``tools/reliability_wire.py``) is
  SIGKILLed at random points (after 1-6 more stage executions, or during start-up) and
  resumed each time, then run to completion; a run that ends before the kills are done
  is checked and the kills go on in a new run (``details.r1_rounds``). Lost settled: a
  completion seen committed after some kill and missing later; duplicates: stages
  completed (or scheduled) twice; equal final: every round's final substrate equals an
  uninterrupted run's (target: true). Counts (kills, writers, variants, calls) below the
  mode's are missed targets too.
* **R2** ``r2_writers``, ``r2_lost_updates`` — 8 processes advance one thread under its
  writer lock, on a fresh database (all opening it at once) and on an existing one; a
  writer still blocked after its timeout (a deadlock) is killed and its updates count
  as lost.
* **R3** ``r3_calls``, ``r3_crashes``, ``r3_writes_on_rejection``, ``r3_unserialisable``
  (per tool) — hostile ``arguments`` strings (``tools/reliability_fuzz.py``) parsed as
  ``langchain_openai`` parses a model's tool calls, run through the real tool loop of a
  stage and its journal; every journaled event must round-trip through the saver's
  serializer and the row codec; a rejected call must change nothing.
* **R4** ``r4_variants``, ``r4_accepted_invalid``, ``r4_crashes``, ``r4_hangs``,
  ``r4_partial_writes`` — malformed snapshot files through ``validate``, strict and
  forensic ``import``; a case over its time bound (5 s) is a hang.
* **R5** ``r5_paths``, ``r5_escapes`` — traversal, encoding, unicode and control-character
  paths through the ``memory`` tool's writing commands.
* **R6** ``r6_conformance`` — langgraph-checkpoint-conformance on every shipped saver,
  async and sync (the sync one driven through its sync methods): ``passed/total``.
* ``corruption_cases``, ``corruption_tracebacks`` — damaged rows (both backends) and
  damaged pages (SQLite), every CLI command on each.
* **Lock loss** ``lock_loss_trials``, ``lock_loss_replaced``, ``lock_loss_unfenced``,
  ``lock_loss_late_bodies``, ``lock_loss_second_failed`` — a running writer's lock is
  taken away and a second writer let in (``tools/reliability_fencing.py``): no committed
  output replaced, the first writer exits non-zero before another stage body.
* ``degree_over_bound``, ``degree_failures``, ``degree_superlinear`` — a star of
  :data:`DEGREE` nodes (fan-in and fan-out) through import, validate (file and thread),
  memory query and export, each command's CPU time against 10 s; fold work at N vs N/10;
  ``limits_refused``, ``limits_stored_over`` — the largest output a run may store through
  run, export, import and validate, and values just over refused at the run;
  ``event_over_cap`` — journaled tool calls over 16,384 bytes (R3's, and calls with many
  unknown fields): ``tools/reliability_limits.py``.

The short mode (CI) runs every probe with small counts; ``--full`` runs the targets'
counts. ``--json`` prints one JSON object on the last line. The exit status is 1
when any target is missed (each named on stderr), 0 otherwise. Postgres comes from
``CORTEX_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
each probe gets fresh databases, dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (str(ROOT), str(ROOT / "tools")):
    if entry not in sys.path:
        sys.path.insert(0, entry)
os.environ.setdefault("LANGSMITH_TRACING", "false")

POSTGRES = os.environ.get("CORTEX_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
EXAMPLE = ROOT / "examples" / "claim_review.json"
CRASH_WIRE = ROOT / "tools" / "reliability_wire.py"
PLAIN_WIRE = ROOT / "graphs" / "fanout_demo.py"
CONFIG = {"configurable": {"thread_id": "shared"}}


@dataclass(frozen=True)
class Mode:
    """How much of each probe to run."""

    name: str
    r1_kills: int
    r1_layers: int
    r2_writers: int
    r2_steps: int
    r3_calls: int
    r3_batch: int
    r4_variants: int
    case_bound_s: float = 5.0
    lock_trials: int = 3  # lock loss: trials, chain length, seconds per stage
    lock_stages: int = 8
    lock_stage_s: float = 0.01


SHORT = Mode(
    "short",
    r1_kills=3,
    r1_layers=34,
    r2_writers=8,
    r2_steps=2,
    r3_calls=100,
    r3_batch=50,
    r4_variants=64,
)
DEGREE = {"short": 10_000, "full": 100_000}  # nodes of the degree probe's star, per mode
FULL = Mode("full", r1_kills=100, r1_layers=300, r2_writers=8, r2_steps=5, r3_calls=5000, r3_batch=50, r4_variants=520, lock_trials=12, lock_stages=60, lock_stage_s=0.1)  # fmt: skip


# -- databases ---------------------------------------------------------------------------------


@contextlib.contextmanager
def fresh_database(backend: str, workdir: Path) -> Iterator[str]:
    """A new, empty database (the SQLite file does not exist yet), removed afterwards."""
    if backend == "sqlite":
        yield str(workdir / f"{uuid.uuid4().hex[:10]}.db")
        return
    import psycopg

    name = f"cortex_rel_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- R1: SIGKILL and resume --------------------------------------------------------------------


def _start(db: str, log: Path, layers: int, errors: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "CORTEX_CRASH_LOG": str(log),
        "CORTEX_RELIABILITY_LAYERS": str(layers),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "-m", "cortex_agents", "run", str(CRASH_WIRE), "--db", db]
    with errors.open("ab") as sink:
        return subprocess.Popen(
            [*command, "--thread", "crash", "--lock-timeout", "60"],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
            cwd=ROOT,
        )


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _substrate(db: str) -> Any:
    from cortex_agents.persistence import open_saver

    with open_saver(db) as saver:
        return saver.substrate({"configurable": {"thread_id": "crash"}})


def _comparable(log: Any) -> dict[str, tuple]:
    state = log.state
    return {
        n.id: (n.kind, n.status, n.output, tuple(sorted(state.predecessors(n.id))))
        for n in state.nodes.values()
    }


def _run_to_end(db: str, log: Path, layers: int, errors: Path) -> None:
    child = _start(db, log, layers, errors)
    if child.wait(timeout=1800) != 0:
        raise RuntimeError(f"the run did not complete: {errors.read_text()[-2000:]}")


def r1(backend: str, mode: Mode, workdir: Path, rng: random.Random) -> dict[str, Any]:
    """SIGKILL long runs at random points, resume, and compare with an uninterrupted run.

    A run that reaches its end before the kills are done is checked, and the
    kills go on in a new run on a fresh database (a round), until the mode's
    count is reached; a round with no kill at all stops the probe (the count
    then misses its target, which the report says).
    """
    with fresh_database(backend, workdir) as reference:
        _run_to_end(reference, workdir / f"ref-{backend}.log", mode.r1_layers, workdir / "ref.err")
        expected = _comparable(_substrate(reference))
    totals = {"r1_kills": 0, "r1_lost_settled": 0, "r1_duplicates": 0, "r1_equal_final": True}
    rounds = executions = 0
    while totals["r1_kills"] < mode.r1_kills:
        rounds += 1
        with fresh_database(backend, workdir) as db:
            one = _r1_round(
                backend,
                db,
                expected,
                mode,
                mode.r1_kills - totals["r1_kills"],
                workdir,
                rng,
                rounds,
            )
        for key in ("r1_kills", "r1_lost_settled", "r1_duplicates"):
            totals[key] += one[key]
        totals["r1_equal_final"] = totals["r1_equal_final"] and one["r1_equal_final"]
        executions += one["executions"]
        if one["r1_kills"] == 0:
            break
    return {**totals, "stages": len(expected), "executions": executions, "rounds": rounds}


def _r1_round(
    backend: str,
    db: str,
    expected: dict[str, tuple],
    mode: Mode,
    wanted: int,
    workdir: Path,
    rng: random.Random,
    round_no: int,
) -> dict[str, Any]:
    """Up to ``wanted`` kills of one run on ``db``, then the run to its end, checked."""
    from cortex_agents.substrate import NodeScheduled, StageCompleted

    errors = workdir / f"r1-{backend}-{round_no}.stderr"
    log = workdir / f"r1-{backend}-{round_no}.log"
    committed: dict[str, Any] = {}
    lost = kills = 0
    while kills < wanted:
        child = _start(db, log, mode.r1_layers, errors)
        base = _lines(log)
        if rng.random() < 0.15:  # during start-up or resume: at the latest, at the first stage
            target, deadline = base + 1, time.monotonic() + rng.uniform(0.05, 1.5)
        else:
            target, deadline = base + rng.randint(1, 6), time.monotonic() + 120
        while _lines(log) < target and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.004))  # within the stage, or just after it
        if child.poll() is not None:
            break  # it finished: the next round goes on with a fresh database
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        kills += 1
        substrate = _substrate(db)
        if substrate is not None:
            now = {n.id: n.output for n in substrate.state.nodes.values() if n.settled}
            lost += sum(1 for k, v in committed.items() if now.get(k) != v)
            committed.update(now)
    _run_to_end(db, log, mode.r1_layers, errors)
    final = _substrate(db)
    now = {n.id: n.output for n in final.state.nodes.values() if n.settled}
    lost += sum(1 for k, v in committed.items() if now.get(k) != v)
    completions = Counter(e.node_id for e in final if isinstance(e, StageCompleted))
    scheduled = Counter(e.node_id for e in final if isinstance(e, NodeScheduled))
    duplicates = sum(c - 1 for c in completions.values()) + sum(c - 1 for c in scheduled.values())
    return {
        "r1_kills": kills,
        "r1_lost_settled": lost,
        "r1_duplicates": duplicates,
        "r1_equal_final": _comparable(final) == expected and len(completions) == len(expected),
        "executions": _lines(log),
    }


# -- R2: writers on one thread -----------------------------------------------------------------


def _writer(database: str, steps: int) -> None:
    """Add ``steps`` steps to the shared thread, holding its writer lock (a child process)."""
    from cortex_agents.persistence import open_saver
    from tests.support.graphs import chain_graph

    with open_saver(database) as saver:
        graph = chain_graph().compile(checkpointer=saver)
        with saver.lock("shared", timeout=None):
            state = graph.get_state(CONFIG).values
            graph.invoke({"goal": state.get("steps", 0) + steps}, CONFIG)


def _writers(database: str, mode: Mode, timeout: float, *, fresh: bool) -> tuple[int, int]:
    """Start the writers at once; ``(lost updates, writers that hung or failed)``."""
    from cortex_agents.persistence import open_saver
    from tests.support.graphs import chain_graph, expected_log

    spawn = multiprocessing.get_context("spawn")
    before = 0
    if not fresh:  # opening a fresh database here would set it up before the writers race
        with open_saver(database) as saver:
            values = chain_graph().compile(checkpointer=saver).get_state(CONFIG).values
            before = values.get("steps", 0)
    procs = [
        spawn.Process(target=_writer, args=(database, mode.r2_steps))
        for _ in range(mode.r2_writers)
    ]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + timeout
    for proc in procs:
        proc.join(max(0.1, deadline - time.monotonic()))
    bad = 0
    for proc in procs:
        if proc.exitcode is None:
            proc.kill()
            proc.join(10)
            bad += 1
        elif proc.exitcode != 0:
            bad += 1
    expected = before + mode.r2_steps * mode.r2_writers
    with open_saver(database) as saver:
        values = chain_graph().compile(checkpointer=saver).get_state(CONFIG).values
    steps = values.get("steps", 0)
    lost = max(0, expected - steps)
    if steps and values["substrate"] != expected_log(steps):
        lost += 1
    return lost, bad


def r2(backend: str, mode: Mode, workdir: Path) -> dict[str, Any]:
    from cortex_agents.persistence import open_saver

    with fresh_database(backend, workdir) as db:
        fresh_lost, fresh_bad = _writers(db, mode, timeout=240, fresh=True)  # all set it up at once
        existing_lost, existing_bad = _writers(db, mode, timeout=240, fresh=False)
    with fresh_database(backend, workdir) as db:
        with open_saver(db):
            pass
        set_up_lost, set_up_bad = _writers(db, mode, timeout=240, fresh=False)  # set up, new thread
    return {
        "r2_writers": mode.r2_writers,
        "r2_lost_updates": fresh_lost + existing_lost + set_up_lost,
        "r2_hung_or_failed_writers": fresh_bad + existing_bad + set_up_bad,
    }


# -- R6: conformance ---------------------------------------------------------------------------


def _conformance(kind: str, backend: str, workdir: Path) -> str:
    from langgraph.checkpoint.conformance import checkpointer_test, validate

    from cortex_agents.persistence import aopen_saver, memory_saver, open_saver
    from tests.support.conformance import sync_driven

    @checkpointer_test(name=f"CortexSaver[{backend}]/{kind}")
    async def factory():
        if backend == "memory":
            yield memory_saver() if kind == "async" else sync_driven(memory_saver())
            return
        with fresh_database(backend, workdir) as db:
            if kind == "async":
                async with aopen_saver(db) as saver:
                    yield saver
            else:
                with open_saver(db) as saver:
                    yield sync_driven(saver)

    report = asyncio.run(validate(factory))
    results = report.to_dict()["results"]
    passed = sum(r.get("tests_passed", 0) for r in results.values())
    failed = sum(r.get("tests_failed", 0) for r in results.values())
    return f"{passed}/{passed + failed}"


def r6(backend: str, workdir: Path) -> dict[str, str]:
    return {kind: _conformance(kind, backend, workdir) for kind in ("async", "sync")}


# -- the suite ---------------------------------------------------------------------------------


def run_backend(backend: str, mode: Mode, seed: int, workdir: Path, log: Any) -> dict[str, Any]:
    import reliability_limits as limits
    import reliability_probes as probes

    out: dict[str, Any] = {}
    details: dict[str, Any] = {}
    timings: dict[str, float] = {}

    def step(name: str, fn: Any) -> dict[str, Any]:
        started = time.monotonic()
        log(f"{backend}: {name} ...")
        result = fn()
        timings[name] = round(time.monotonic() - started, 1)
        log(f"{backend}: {name} done in {timings[name]} s: {json.dumps(result, default=str)[:400]}")
        return result

    r1_result = step("R1", lambda: r1(backend, mode, workdir, random.Random(seed)))
    r2_result = step("R2", lambda: r2(backend, mode, workdir))
    with fresh_database(backend, workdir) as db:
        r3_result = step(
            "R3", lambda: probes.r3(db, mode.r3_calls, mode.r3_batch, random.Random(seed))
        )
        events = step("event size", lambda: limits.events(db, probes))
    with fresh_database(backend, workdir) as db:
        values = step("largest value", lambda: limits.limits(db, workdir, probes.cli))
    with fresh_database(backend, workdir) as db:
        degree = step("degree", lambda: limits.degree(db, workdir, DEGREE[mode.name], 10.0))
    with fresh_database(backend, workdir) as db:
        r4_result = step(
            "R4",
            lambda: probes.r4(
                db, workdir, EXAMPLE, mode.r4_variants, mode.case_bound_s, random.Random(seed)
            ),
        )
    with fresh_database(backend, workdir) as db:
        r5_result = step("R5", lambda: probes.r5(db))
    r6_result = step("R6", lambda: r6(backend, workdir))
    corrupt = step(
        "corruption",
        lambda: probes.corruption(
            lambda: fresh_database(backend, workdir), workdir, EXAMPLE, PLAIN_WIRE, backend
        ),
    )
    out |= {
        k: r1_result[k] for k in ("r1_kills", "r1_lost_settled", "r1_duplicates", "r1_equal_final")
    }
    out |= {k: r2_result[k] for k in ("r2_writers", "r2_lost_updates")}
    out |= {k: v for k, v in r3_result.items() if k.startswith("r3_")}
    out |= {k: v for k, v in r4_result.items() if k.startswith("r4_")}
    out |= {k: v for k, v in r5_result.items() if k.startswith("r5_")}
    out["r6_conformance"] = r6_result
    out |= {k: v for k, v in corrupt.items() if k.startswith("corruption_")}
    out |= {k: v for part in (events, values, degree) for k, v in part.items() if k != "details"}
    details = {
        "r1_stages": r1_result["stages"],
        "r1_executions": r1_result["executions"],
        "r1_rounds": r1_result["rounds"],
        "r2_hung_or_failed_writers": r2_result["r2_hung_or_failed_writers"],
        "r3": r3_result.get("details", {}),
        "r4_examples": r4_result.get("examples", {}),
        "r5_escaped": r5_result.get("escaped", []),
        "corruption_examples": corrupt.get("examples", []),
        "seconds": timings,
        "events": events["details"],
        "largest_value": values["details"],
        "degree": degree["details"],
    }
    from reliability_fencing import lock_loss

    lost = step(
        "lock loss",
        lambda: lock_loss(
            lambda: fresh_database(backend, workdir),
            mode.lock_trials,
            mode.lock_stages,
            mode.lock_stage_s,
            workdir,
            random.Random(seed),
        ),
    )
    out |= {k: v for k, v in lost.items() if k.startswith("lock_loss_")}
    details["lock_loss_runs"] = lost["runs"]
    return {"figures": out, "details": details}


def failures(report: dict[str, Any], mode: Mode) -> list[str]:
    """Every figure that misses its target: a zero, a pass rate, or a count below the mode's."""
    missed = []
    counts = {
        "r1_kills": mode.r1_kills,
        "r2_writers": mode.r2_writers,
        "r4_variants": mode.r4_variants,
        "lock_loss_trials": mode.lock_trials,
    }
    for backend, result in report["backends"].items():
        for key, value in result.items():
            if key in counts:
                if value < counts[key]:
                    missed.append(
                        f"{backend}.{key} = {value} (the {mode.name} mode asks >= {counts[key]})"
                    )
                continue
            if key == "r3_calls":
                short = {tool: n for tool, n in value.items() if n < mode.r3_calls}
                if short:
                    missed.append(
                        f"{backend}.r3_calls = {short} (asks >= {mode.r3_calls} per tool)"
                    )
                continue
            if key in ("r5_paths", "corruption_cases"):
                continue
            if key == "r1_equal_final":
                ok = value is True
            elif key == "r6_conformance":
                ok = all(a == b for a, b in (v.split("/") for v in value.values()))
            elif isinstance(value, dict):
                ok = all(v == 0 for v in value.values())
            else:
                ok = value == 0
            if not ok:
                missed.append(f"{backend}.{key} = {value}")
    for key, value in report.get("memory", {}).items():
        if not all(a == b for a, b in (v.split("/") for v in value.values())):
            missed.append(f"memory.{key} = {value}")
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the nightly counts (long)")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    mode = FULL if args.full else SHORT
    started = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    report: dict[str, Any] = {"mode": mode.name, "seed": args.seed, "backends": {}, "details": {}}
    with tempfile.TemporaryDirectory(prefix="cortex-reliability-") as tmp:
        workdir = Path(tmp)
        previous = Path.cwd()
        os.chdir(ROOT)  # wires and examples are named from the repository root
        try:
            for backend in [b for b in args.backends.split(",") if b]:
                result = run_backend(backend, mode, args.seed, workdir, log)
                report["backends"][backend] = result["figures"]
                report["details"][backend] = result["details"]
            report["memory"] = {"r6_conformance": r6("memory", workdir)}
        finally:
            os.chdir(previous)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["missed_targets"] = failures(report, mode)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, default=str))
    else:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    for missed in report["missed_targets"]:
        print(f"missed target: {missed}", file=sys.stderr)
    return 1 if report["missed_targets"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
