"""SIGKILL between a solo stage's end and the commit that holds its writes: the stage runs again.

A solo stage's pending writes wait for the next checkpoint's transaction
(persistence/solo.py). A crash in between loses both — the same loss as a
crash just before the stage ended: the thread resumes from the checkpoint the
stage ran at, LangGraph finds no writes of its task there and runs it again,
and the final substrate is that of an uninterrupted run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cortex_agents.persistence import open_saver
from cortex_agents.substrate import StageCompleted

CHILD = Path(__file__).with_name("solo_child.py")
KILL_AT = 3  # the third stage: s2
CONFIG = {"configurable": {"thread_id": "solo"}}


def run(db: str, log: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), db, str(log), str(kill_at)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def comparable(log) -> dict[str, tuple]:
    state = log.state
    return {n.id: (n.status, n.attempts, n.output) for n in state.nodes.values()}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def databases(request, tmp_path) -> Iterator[tuple[str, str]]:
    """Two empty databases: the crashed run's and the reference's."""
    if request.param == "sqlite":
        yield str(tmp_path / "crashed.db"), str(tmp_path / "reference.db")
        return
    import psycopg

    first = request.getfixturevalue("postgres_url")
    head, _, name = first.rpartition("/")
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}_ref"')
    try:
        yield first, f"{head}/{name}_ref"
    finally:
        with psycopg.connect(first, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}_ref" WITH (FORCE)')


def test_a_kill_before_the_merged_commit_loses_the_stage_and_the_resume_runs_it_again(
    databases, tmp_path
):
    db, reference_db = databases
    reference = run(reference_db, tmp_path / "reference.log", 0)
    assert reference.returncode == 0 and "complete" in reference.stdout, reference.stderr

    executions = tmp_path / "crashed.log"
    killed = run(db, executions, KILL_AT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    before = executions.read_text().split()
    # s2 ended, then the kill (later stages may have run too: under "async" durability
    # LangGraph goes on while checkpoints are being stored; theirs could only follow s2's)
    assert before[:3] == ["s0", "s1", "s2"], before
    with open_saver(db) as saver:  # s2's writes went with its checkpoint: neither is stored
        tup = saver.get_tuple(CONFIG)
        log = tup.checkpoint["channel_values"]["substrate"]
        done = {e.node_id for e in log if isinstance(e, StageCompleted)}
        assert done == {"s0", "s1"}
        assert not [w for w in tup.pending_writes if w[1] != "__error__"]

    resumed = run(db, executions, 0)
    assert resumed.returncode == 0 and "complete" in resumed.stdout, resumed.stderr
    again = Counter(executions.read_text().split()) - Counter(before)
    # s2 ran again, and whatever ran after it; nothing committed before the kill did
    assert again == Counter(f"s{i}" for i in range(2, 6)), again
    with open_saver(db) as crashed, open_saver(reference_db) as ref:
        final, expected = crashed.substrate(CONFIG), ref.substrate(CONFIG)
    assert comparable(final) == comparable(expected)
    completions = Counter(e.node_id for e in final if isinstance(e, StageCompleted))
    assert set(completions.values()) == {1} and len(completions) == 6
