"""Lock loss (issue 23): a running writer's lock is taken away, and a second writer is let in.

Each trial runs ``cortex-agents run`` of a chain wire (``tests/integration/fencing_wire.py``)
as writer A, holds A inside the body of a random stage, takes the thread's lock away from
outside (the lock file deleted; the advisory lock's connection terminated) and starts
writer B on the thread with ``--lock-timeout 0``. A's body is released before B starts,
once B began a stage body (A's commit then meets B mid-run), or after B finished — in
turn. A reader polls the database throughout and keeps the first output it saw committed
for each stage.

Figures (all zero but the count): ``lock_loss_trials``; ``lock_loss_replaced``, committed
outputs that differ at the end; ``lock_loss_unfenced``, trials where A did not exit non-zero
with ``WriterFenced``'s message; ``lock_loss_late_bodies``, stage bodies A began after the
loss (the one in flight began before it: A must stop within its superstep);
``lock_loss_second_failed``, trials where B did not complete the thread.

``tools/reliability.py`` runs it per backend in both modes; alone::

    python tools/reliability_fencing.py [--full] [--backends sqlite,postgres] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _entry in (str(ROOT), str(ROOT / "tools")):
    if _entry not in sys.path:
        sys.path.insert(0, _entry)
WIRE = ROOT / "tests" / "integration" / "fencing_wire.py"
RELEASES = ("before the second writer", "once it began a stage", "after it finished")
FIGURES = (
    "lock_loss_replaced",
    "lock_loss_unfenced",
    "lock_loss_late_bodies",
    "lock_loss_second_failed",
)


def _start(db: str, writer: str, log: Path, env: dict[str, str], hold_at: str = "") -> Any:
    command = [sys.executable, "-m", "cortex_agents", "run", str(WIRE), "--db", db]
    return subprocess.Popen(
        [*command, "--thread", "t", "--lock-timeout", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            **env,
            "FENCING_WRITER": writer,
            "FENCING_LOG": str(log),
            "FENCING_HOLD_AT": hold_at,
            "PYTHONUNBUFFERED": "1",
        },
    )


def _began(log: Path, writer: str) -> int:
    try:
        return sum(1 for line in log.read_text().splitlines() if line.startswith(f"{writer} "))
    except FileNotFoundError:
        return 0


def _trial(db: str, stages: int, seconds: float, hold: int, release: int, log: Path) -> dict:
    from cortex_agents.persistence import open_saver
    from tests.support.fencing import lose_lock

    env = {"FENCING_STAGES": str(stages), "FENCING_SECONDS": str(seconds)}
    first = _start(db, "A", log, env, hold_at=f"s{hold}")
    for line in first.stdout:
        if line.startswith("in flight "):
            break
    else:
        raise RuntimeError(f"writer A ended before stage s{hold}: rc {first.wait()}")
    seen: dict[str, Any] = {}
    with open_saver(db) as reader:

        def completed() -> dict[str, Any]:
            log_ = reader.substrate({"configurable": {"thread_id": "t"}})
            return (
                {}
                if log_ is None
                else {n.id: n.output for n in log_.state.nodes.values() if n.settled}
            )

        def observe(*procs: Any) -> None:
            while True:
                for key, value in completed().items():
                    seen.setdefault(key, value)
                if all(p.poll() is not None for p in procs):
                    return
                time.sleep(0.02)

        def let_go() -> None:
            first.stdin.write("\n")
            first.stdin.flush()

        observe()
        lose_lock(db, "t")
        at_loss = _began(log, "A")
        if release == 0:
            let_go()
            observe(first)
        second = _start(db, "B", log, env)
        if release == 1:  # A's commit lands while B is mid-run
            while _began(log, "B") == 0 and second.poll() is None:
                observe()
            let_go()
        observe(second)
        if release == 2:
            let_go()
        observe(first, second)
        final = completed()
    rest = first.stdout.read()
    second.communicate()
    return {
        "lock_loss_replaced": sum(1 for k, v in seen.items() if final.get(k) != v),
        "lock_loss_unfenced": int(first.returncode == 0 or "stopped:" not in rest),
        "lock_loss_late_bodies": _began(log, "A") - at_loss,
        "lock_loss_second_failed": int(second.returncode != 0 or len(final) != stages),
        "a_bodies": _began(log, "A"),
        "b_bodies": _began(log, "B"),
    }


def lock_loss(
    fresh_database: Callable[[], AbstractContextManager[str]],
    trials: int,
    stages: int,
    seconds: float,
    workdir: Path,
    rng: random.Random,
) -> dict[str, Any]:
    """Run the trials, each on a fresh database; the figures, and what each trial did."""
    totals = dict.fromkeys(FIGURES, 0)
    runs = []
    for trial in range(trials):
        hold = rng.randint(1, stages - 3)  # a stage after it, for A to stop before
        release = trial % len(RELEASES)
        with fresh_database() as db:
            one = _trial(db, stages, seconds, hold, release, workdir / f"lock-{trial}.log")
        for key in FIGURES:
            totals[key] += one[key]
        runs.append({"held_at": f"s{hold}", "released": RELEASES[release], **one})
    return {"lock_loss_trials": trials, **totals, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    """The probe alone: one JSON object per backend, then the missed targets (exit 1 if any)."""
    import tempfile

    import reliability

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full mode's counts")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args(argv)
    mode = reliability.FULL if args.full else reliability.SHORT
    missed = []
    with tempfile.TemporaryDirectory(prefix="cortex-lock-loss-") as tmp:
        for backend in [b for b in args.backends.split(",") if b]:
            started = time.monotonic()
            result = lock_loss(
                lambda b=backend: reliability.fresh_database(b, Path(tmp)),
                mode.lock_trials,
                mode.lock_stages,
                mode.lock_stage_s,
                Path(tmp),
                random.Random(args.seed),
            )
            figures = {k: v for k, v in result.items() if k != "runs"}
            print(json.dumps({"backend": backend, "mode": mode.name, **figures,
                              "seconds": round(time.monotonic() - started, 1)}), flush=True)  # fmt: skip
            missed += [f"{backend}.{k} = {figures[k]}" for k in FIGURES if figures[k]]
    for line in missed:
        print(f"missed target: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
