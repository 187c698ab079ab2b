"""Crashes around a rewrite: between admission and materialization, and inside the proposing stage.
Resume completes the rewrite exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cortex_agents.persistence import open_saver
from cortex_agents.substrate import (
    NodeScheduled,
    RewriteAdmitted,
    RewriteApplied,
    StageCompleted,
    StageStarted,
)

CHILD = Path(__file__).with_name("rewrite_child.py")
NEW = ("worker:follow", "worker:check")


def child(
    db: Path, mode: str, executions: Path, *, side: bool = False
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHILD), str(db), mode, str(executions)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SIDE": "1" if side else "0"},
    )


def substrate(db: Path):
    with open_saver(db) as saver:
        return saver.substrate({"configurable": {"thread_id": "t"}})


def count(log, cls, **match) -> int:
    return sum(
        1 for e in log if isinstance(e, cls) and all(getattr(e, k) == v for k, v in match.items())
    )


def assert_rewritten_once(log, *, side: bool = False) -> None:
    state = log.state
    assert count(log, RewriteAdmitted) == 1 and count(log, RewriteApplied) == 1
    assert state.watermark == 1 and state.unapplied_rewrites == ()
    for node in NEW:
        assert count(log, NodeScheduled, node_id=node) == 1
        assert count(log, StageCompleted, node_id=node) == 1
    completions = Counter(e.node_id for e in log if isinstance(e, StageCompleted))
    expected = {"root", "worker", *NEW, "sink", *(["side"] if side else [])}
    assert set(completions) == expected and set(completions.values()) == {1}
    starts = [e.node_id for e in log if isinstance(e, StageStarted)]
    assert starts.index("worker:check") < starts.index("sink")
    assert state.predecessors("sink") == ("worker:check",)


def test_a_crash_between_admission_and_materialization_is_finished_on_resume(tmp_path):
    db, executions = tmp_path / "r.db", tmp_path / "ran.log"
    crashed = child(db, "after_admission", executions)
    assert crashed.returncode == 9, crashed.stdout + crashed.stderr
    before = substrate(db)
    assert count(before, RewriteAdmitted) == 1 and count(before, RewriteApplied) == 0
    assert before.state.unapplied_rewrites and "worker:follow" not in before.state.nodes

    resumed = child(db, "none", executions, side=True)
    assert resumed.returncode == 0 and "complete" in resumed.stdout, resumed.stderr
    assert_rewritten_once(substrate(db), side=True)
    # the worker's decision was committed: it did not run (or propose) again
    assert executions.read_text().split().count("worker") == 1


def test_a_stage_alone_in_its_superstep_commits_its_rewrite_with_its_materialization(tmp_path):
    db, executions = tmp_path / "r.db", tmp_path / "ran.log"
    crashed = child(db, "solo_admission", executions)
    assert crashed.returncode == 9, crashed.stdout + crashed.stderr
    before = substrate(db)  # no window between the decision and its nodes: neither is stored
    assert count(before, RewriteAdmitted) == 0 and before.state.unapplied_rewrites == ()
    assert before.state.node("root").settled and before.state.node("worker").status == "pending"

    resumed = child(db, "none", executions)
    assert resumed.returncode == 0 and "complete" in resumed.stdout, resumed.stderr
    log = substrate(db)
    assert_rewritten_once(log)
    assert executions.read_text().split().count("worker") == 2  # the body ran again
    assert [f.key for f in log.state.rewrites] == ["worker#1:p1"]


@pytest.mark.parametrize("mode", ["mid_stage"])
def test_a_crash_inside_the_proposing_stage_admits_once_on_resume(tmp_path, mode):
    db, executions = tmp_path / "r.db", tmp_path / "ran.log"
    crashed = child(db, mode, executions)
    assert crashed.returncode == 9, crashed.stdout + crashed.stderr
    assert substrate(db).state.rewrites == ()  # nothing of the dead stage was committed

    resumed = child(db, "none", executions)
    assert resumed.returncode == 0, resumed.stderr
    log = substrate(db)
    assert_rewritten_once(log)
    assert executions.read_text().split().count("worker") == 2  # the body ran again
    assert [f.key for f in log.state.rewrites] == ["worker#1:p1"]
