#!/usr/bin/env python3
"""Many workers on one database: P processes x T threads each, against one process.

Each worker process opens one saver on the shared database (Postgres, or a
SQLite file for contrast), builds one :class:`~cortex_agents.runtime.Runtime`
for a chain wire of ``--stages`` stages, and runs its T threads (runs) in
turn, as a worker taking jobs from a queue would; each ``Runtime.run`` holds
the thread's writer lock, as every invocation does. A stage either sleeps
``--stage-ms`` (``--stage-kind io``: a model or a tool waited for) or burns
that much CPU (``--stage-kind cpu``).

The baseline is measured in the same run, on a fresh database of its own:
ONE process running the same P x T threads in turn. Throughput is stages
completed per second of wall time, from the moment every worker is ready
(imports done, saver open, wire compiled) to the last thread's end, so
process start-up is not counted on either side. ``speedup`` is the ratio of
the two; ``ideal_fraction`` is ``speedup / P`` (P processes can at best do P
times the work of one).

Afterwards every thread of both runs is validated the way ``cortex-agents
validate DB --thread T`` does (:func:`~cortex_agents.persistence._validation.validate_thread`),
and checked complete (every stage completed, run to the end once):
``invalid_threads`` counts the threads that fail either check.

The last line of ``--json`` is one object: ``processes``, ``threads`` (per
process), ``stages_per_s``, ``single_process_stages_per_s``, ``speedup``,
``invalid_threads``, plus ``ideal_fraction``, the backend, the stage kind,
the durability, the stages completed, the time each took, where the time
went (CPU per stage of the workers and of their Postgres server processes —
the short connection each run's writer lock opens is not counted — and how
busy the machine's cores were: 1.0 is CPU-bound), the load average before
and after, and the targets. ``--durability`` is the runtime's checkpoint
durability (``async``, its default; ``exit`` writes one checkpoint per run,
and a crash re-runs that run's stages). Target (issue 24): 8
processes, I/O-bound stages on Postgres: speedup >= 6.5 and >= 0.8 of ideal,
0 invalid threads. Postgres comes from ``CORTEX_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``); each run gets fresh
databases, dropped afterwards.

    python tools/bench_scale.py --processes 8 --threads 25 --stage-ms 10 --json
    python tools/bench_scale.py --processes 8 --threads 25 --stage-ms 10 --stage-kind cpu --json
    python tools/bench_scale.py --backend sqlite --processes 8 --threads 25 --json
    python tools/bench_scale.py --processes 8 --threads 25 --durability exit --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LANGSMITH_TRACING", "false")

POSTGRES = os.environ.get("CORTEX_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
Durability = Literal["async", "sync", "exit"]
TARGET_SPEEDUP = 6.5
TARGET_IDEAL_FRACTION = 0.8
READY_TIMEOUT_S = 300.0


# -- the wire ----------------------------------------------------------------------------------


def _io_stage(ctx: Any) -> dict[str, Any]:
    """Wait ``stage_ms`` (a model or a tool answering), then settle a small output."""
    ms = ctx.config["ms"]
    time.sleep(ms / 1000)
    return {"stage": ctx.stage_id, "after": sorted(ctx.inputs), "ms": ms}


def _cpu_stage(ctx: Any) -> dict[str, Any]:
    """Burn ``stage_ms`` of this process's CPU time, then settle a small output."""
    ms = ctx.config["ms"]
    until = time.process_time() + ms / 1000
    spins = 0
    while time.process_time() < until:
        spins += sum(range(200))  # work the interpreter cannot skip
    return {"stage": ctx.stage_id, "after": sorted(ctx.inputs), "ms": ms, "spins": spins > 0}


def chain_wire(stages: int, stage_ms: float, kind: str) -> Any:
    """A chain of ``stages`` stages (each after the one before), sleeping or burning CPU."""
    from cortex_agents.runtime import WireBuilder

    builder = WireBuilder("bench_scale").kind("work", _cpu_stage if kind == "cpu" else _io_stage)
    for i in range(stages):
        after = [f"s{i - 1:03d}"] if i else []
        builder.stage(f"s{i:03d}", "work", after=after, config={"ms": stage_ms})
    return builder.build()


# -- databases ---------------------------------------------------------------------------------


@contextlib.contextmanager
def fresh_database(backend: str, workdir: Path) -> Iterator[str]:
    """A new, empty database, removed afterwards (a Postgres database, or a SQLite file path)."""
    if backend == "sqlite":
        yield str(workdir / f"scale-{uuid.uuid4().hex[:10]}.db")
        return
    import psycopg

    name = f"cortex_scale_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _prepare(db: str) -> None:
    """Create the schema once, before the workers open the database (not timed, not raced)."""
    from cortex_agents.persistence import open_saver

    with open_saver(db):
        pass


# -- one worker --------------------------------------------------------------------------------


def worker(
    db: str,
    thread_ids: list[str],
    stages: int,
    stage_ms: float,
    kind: str,
    durability: Durability,
    ready: Any,
    start: Any,
    results: Any,
) -> None:
    """Open the database, compile the wire, wait for the start, run each thread in turn.

    Puts ``(thread ids completed, stages completed, end time, CPU seconds, server CPU
    seconds, error)`` on ``results``: the CPU time of the process (every thread of it)
    and of its Postgres connections' server processes from the start on.
    """
    try:
        from cortex_agents.persistence import open_saver
        from cortex_agents.runtime import Runtime

        wire = chain_wire(stages, stage_ms, kind)
        with open_saver(db) as saver:
            runtime = Runtime(wire, saver, lock_timeout=60.0, durability=durability)
            backends = _backend_pids(saver)
            ready.put(os.getpid())
            start.wait()
            cpu, server = _cpu_seconds(), _process_cpu_seconds(backends)
            done, settled = [], 0
            for thread_id in thread_ids:
                result = runtime.run(thread_id, {"job": thread_id})
                settled += sum(1 for n in result.state.nodes.values() if n.settled)
                done.append(thread_id)
            ended, cpu = time.monotonic(), _cpu_seconds() - cpu
            server_after = _process_cpu_seconds(backends)
            server = None if server is None or server_after is None else server_after - server
            results.put((done, settled, ended, cpu, server, None))
    except BaseException as exc:  # reported to the parent, which fails the run with it
        ready.put(os.getpid())
        results.put(([], 0, time.monotonic(), 0.0, None, f"{type(exc).__name__}: {exc}"))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_ticks() -> tuple[int, int]:
    """``(busy, total)`` CPU ticks of the whole machine so far (``/proc/stat``; zeros elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user time
    return total - idle, total


def _backend_pids(saver: Any) -> list[int]:
    """The Postgres server processes behind a saver's two long-lived connections.

    (The checkpoint saver's and the substrate store's; the short connection
    each invocation's writer lock takes is not counted.) Empty on SQLite.
    """
    pids = []
    for conn in (getattr(saver.inner, "conn", None), getattr(saver.store, "conn", None)):
        pid = getattr(getattr(conn, "info", None), "backend_pid", None)
        if isinstance(pid, int):
            pids.append(pid)
    return pids


def _process_cpu_seconds(pids: list[int]) -> float | None:
    """CPU time of these processes of this machine so far (``None``: one cannot be read)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
        except OSError:  # another machine's server, or gone
            return None
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(
    db: str,
    processes: int,
    per_process: int,
    stages: int,
    stage_ms: float,
    kind: str,
    durability: Durability,
    tag: str,
) -> dict[str, Any]:
    """Run ``processes`` workers of ``per_process`` threads each; stages per second of wall time."""
    context = multiprocessing.get_context("spawn")  # clean interpreters, as separate workers are
    ready, results, start = context.Queue(), context.Queue(), context.Event()
    threads = [[f"{tag}-p{p}-t{t}" for t in range(per_process)] for p in range(processes)]
    children = [
        context.Process(
            target=worker,
            args=(db, ids, stages, stage_ms, kind, durability, ready, start, results),
        )
        for ids in threads
    ]
    for child in children:
        child.start()
    for _ in children:
        ready.get(timeout=READY_TIMEOUT_S)
    busy, total = _machine_ticks()
    began = time.monotonic()
    start.set()
    outcomes = [results.get() for _ in children]
    busy, total = (a - b for a, b in zip(_machine_ticks(), (busy, total), strict=True))
    for child in children:
        child.join()
    errors = [error for *_, error in outcomes if error]
    if errors:
        raise RuntimeError(f"{len(errors)} worker(s) failed: {errors[0]}")
    settled = sum(s for _, s, *_ in outcomes)
    elapsed = max(end for _, _, end, *_ in outcomes) - began
    return {
        "thread_ids": [t for ids in threads for t in ids],
        "settled": settled,
        "seconds": elapsed,
        "stages_per_s": settled / elapsed,
        "worker_cpu_ms_per_stage": sum(o[3] for o in outcomes) / max(settled, 1) * 1e3,
        "postgres_cpu_ms_per_stage": None
        if any(o[4] is None for o in outcomes)
        else sum(o[4] for o in outcomes) / max(settled, 1) * 1e3,
        "machine_busy": busy / total if total else None,
    }


def invalid_threads(db: str, thread_ids: list[str], stages: int) -> list[str]:
    """The threads that fail ``validate DB --thread T``'s check or did not complete every stage."""
    from cortex_agents.persistence import open_saver, thread_config, validate_thread

    bad = []
    with open_saver(db) as saver:
        for thread_id in thread_ids:
            report = validate_thread(saver, thread_id)
            log = saver.substrate(thread_config(thread_id))
            nodes = log.state.nodes.values() if log is not None else ()
            complete = len(nodes) == stages and all(n.settled and n.attempts == 1 for n in nodes)
            if not (report.valid and complete):
                bad.append(thread_id)
    return bad


def _rounded(measured: dict[str, dict[str, Any]], key: str, digits: int) -> dict[str, Any]:
    """``{"many": x, "one": y}`` for one figure of both measurements."""
    return {
        tag: None if one[key] is None else round(one[key], digits) for tag, one in measured.items()
    }


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both measurements, each on a fresh database, then every thread validated."""
    load_before = _loadavg()
    with tempfile.TemporaryDirectory(prefix="cortex-scale-") as tmp:
        measured = {}
        bad: list[str] = []
        shapes = (("many", args.processes, args.threads), ("one", 1, args.processes * args.threads))
        for tag, processes, per_process in shapes:
            with fresh_database(args.backend, Path(tmp)) as db:
                _prepare(db)
                one = measure(
                    db,
                    processes,
                    per_process,
                    args.stages,
                    args.stage_ms,
                    args.stage_kind,
                    args.durability,
                    tag,
                )
                bad += invalid_threads(db, one["thread_ids"], args.stages)
                measured[tag] = one
    many, single = measured["many"]["stages_per_s"], measured["one"]["stages_per_s"]
    speedup = many / single
    report = {
        "processes": args.processes,
        "threads": args.threads,
        "stages_per_s": round(many, 1),
        "single_process_stages_per_s": round(single, 1),
        "speedup": round(speedup, 2),
        "invalid_threads": len(bad),
        "ideal_fraction": round(speedup / args.processes, 3),
        "backend": args.backend,
        "stage_kind": args.stage_kind,
        "durability": args.durability,
        "stages": args.stages,
        "stage_ms": args.stage_ms,
        "threads_total": args.processes * args.threads,
        "stages_completed": {tag: one["settled"] for tag, one in measured.items()},
        "seconds": round(measured["many"]["seconds"], 2),
        "single_process_seconds": round(measured["one"]["seconds"], 2),
        "invalid_thread_ids": bad[:10],
        # where the time goes: CPU per stage of the workers (all their threads) and of the
        # Postgres server processes of their connections (None on SQLite), and how busy the
        # machine's cores were during each measurement (1.0: saturated, CPU-bound)
        "worker_cpu_ms_per_stage": _rounded(measured, "worker_cpu_ms_per_stage", 3),
        "postgres_cpu_ms_per_stage": _rounded(measured, "postgres_cpu_ms_per_stage", 3),
        "machine_busy": _rounded(measured, "machine_busy", 3),
        "cores": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": _loadavg(),
        "target_speedup": TARGET_SPEEDUP,
        "target_ideal_fraction": TARGET_IDEAL_FRACTION,
        "target_met": speedup >= TARGET_SPEEDUP
        and speedup / args.processes >= TARGET_IDEAL_FRACTION
        and not bad,
    }
    return report


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--help`` lists it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--processes", type=_positive_int, default=8, help="worker processes")
    parser.add_argument("--threads", type=_positive_int, default=25, help="threads per process")
    parser.add_argument("--stages", type=_positive_int, default=20, help="stages in the chain")
    parser.add_argument("--stage-ms", type=_non_negative, default=10.0, help="ms per stage")
    parser.add_argument(
        "--stage-kind",
        choices=["io", "cpu"],
        default="io",
        help="io: a stage sleeps --stage-ms; cpu: it burns that much CPU",
    )
    parser.add_argument(
        "--cpu", dest="stage_kind", action="store_const", const="cpu", help="--stage-kind cpu"
    )
    parser.add_argument(
        "--durability",
        choices=["async", "sync", "exit"],
        default="async",
        help="the runtime's checkpoint durability (default async, Runtime's default); "
        "exit: one checkpoint per run, a crash re-runs the run's stages",
    )
    parser.add_argument("--json", action="store_true", help="print JSON only")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>28}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
