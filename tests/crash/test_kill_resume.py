"""SIGKILL a running wire at random moments, resume each time, compare with an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from cortex_agents.persistence import open_saver
from cortex_agents.substrate import StageCompleted

WIRE = Path(__file__).with_name("long_wire.py")
KILLS = 20
STAGES = 300


def start(db: Path, log: Path, width: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "CORTEX_CRASH_LOG": str(log),
        "CORTEX_CRASH_WIDTH": str(width),
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cortex_agents",
            "run",
            str(WIRE),
            "--db",
            str(db),
            "--thread",
            "crash",
            "--lock-timeout",
            "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )


def run_to_end(db: Path, log: Path, width: int) -> None:
    child = start(db, log, width)
    output, _ = child.communicate(timeout=600)
    assert child.returncode == 0, output


def final_state(db: Path):
    with open_saver(db) as saver:
        return saver.substrate({"configurable": {"thread_id": "crash"}})


def comparable(log) -> dict[str, tuple]:
    """Everything but timestamps: kind, status, attempts, output, inputs."""
    state = log.state
    return {
        n.id: (n.kind, n.status, n.attempts, n.output, tuple(sorted(state.predecessors(n.id))))
        for n in state.nodes.values()
    }


# width 1: a chain, whose stages' writes wait for the next checkpoint's commit
@pytest.mark.parametrize("width", [3, 1], ids=["layers", "chain"])
def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path, crash_report, width):
    reference_db, reference_log = tmp_path / "reference.db", tmp_path / "reference.log"
    run_to_end(reference_db, reference_log, width)
    expected = final_state(reference_db)

    db, executions = tmp_path / "crashed.db", tmp_path / "crashed.log"
    rng = random.Random(int(os.environ.get("CORTEX_CRASH_SEED", "7")))
    kills = 0
    while kills < KILLS:
        child = start(db, executions, width)
        line = child.stdout.readline()  # "running ..." once the run has begun
        time.sleep(rng.uniform(0.02, 0.35))
        if child.poll() is not None:  # it finished before the kill
            child.stdout.close()
            break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert line.startswith("running"), line
        kills += 1
    run_to_end(db, executions, width)
    assert kills == KILLS, f"the run finished after {kills} kills; make the wire longer"

    crashed = final_state(db)
    assert comparable(crashed) == comparable(expected)
    completions = Counter(e.node_id for e in crashed if isinstance(e, StageCompleted))
    assert len(completions) == STAGES and set(completions.values()) == {1}  # none lost, none twice
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()

    ran = executions.read_text().split()
    reexecuted = len(ran) - STAGES
    assert set(ran) == set(completions)
    crash_report.append(
        f"{kills} SIGKILLs over a {STAGES}-stage run (width {width}): {len(ran)} stage executions, "
        f"{reexecuted} re-executions (bodies run at least once); final substrate equals the uninterrupted run's"
    )
