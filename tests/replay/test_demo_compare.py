"""``cortex-agents demo --compare``: a held-out eval case, both reviewers, at 80 columns.

The case and everything the checks expect are read from the eval's data (the
recorded table, the case set, the two arms replayed here from the same
cassettes), never written out: a re-recording that changes the case keeps
these tests meaningful.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from cortex_agents._bundled import bundled_path
from cortex_agents.evaluation._review_runs import load_recorded, replay_case, showcase
from cortex_agents.evaluation._review_score import score_review
from cortex_agents.evaluation._reviews import build_review_cases
from cortex_agents.persistence import memory_saver
from cortex_agents.substrate import ToolCallMade
from tests.replay.test_demo import and_list, demo, next_commands, prose, table_columns

FOLDER = bundled_path("cassettes", "reviews")


@pytest.fixture(scope="module")
def recorded():
    return load_recorded(FOLDER, "heldout")


@pytest.fixture(scope="module")
def chosen(recorded):
    return showcase(recorded["table"], build_review_cases("heldout"))


@pytest.fixture(scope="module")
def arms(chosen):
    """The chosen case's classic and topological runs, replayed here in memory."""
    return {
        arm: replay_case(FOLDER, "heldout", chosen.case, arm, memory_saver(), thread=arm)
        for arm in ("classic", "topological")
    }


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    db = tmp_path_factory.mktemp("compare") / "c.db"
    return db, demo("--compare", db=db)


def _review(result):
    return result.outputs["reviewer"]["value"]


def test_the_chosen_case_is_one_where_the_reviewers_differ(recorded, chosen, arms):
    case = chosen.case
    row = recorded["table"]["per_case"][case.id]
    assert chosen.differs
    # the recording has a case where topological caught the flaw and classic did not
    assert row["topological"]["detected"] and not row["classic"]["detected"]
    # and the replay here scores the same
    assert score_review(case, _review(arms["topological"])).detected
    assert not score_review(case, _review(arms["classic"])).detected


def test_compare_fits_80_columns_shows_no_time_and_every_next_command_pastes_whole(shown, chosen):
    db, out = shown
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "0.00s" not in out and not re.search(r"\d\.\d\ds\)", out)
    thread = f"heldout-{chosen.case.id}"
    assert next_commands(out) == [
        ["cortex-agents", "inspect", str(db), "--thread", f"{thread}-topological"],
        [
            "cortex-agents",
            "export",
            str(db),
            "--thread",
            f"{thread}-topological",
            *("--as-seen-by", "reviewer", "-o", "seen.json"),
        ],
        ["cortex-agents", "inspect", str(db), "--thread", f"{thread}-classic"],
    ]
    text = prose(out)
    assert chosen.rule in text and f"held-out review case {chosen.case.id}" in text
    assert "(network blocked, model qwen2.5-coder-1.5b)" in text


def test_the_two_reviews_side_by_side_are_the_replayed_ones(shown, arms):
    _, out = shown
    classic, topological = table_columns(out)
    recalled = arms["topological"].outputs["reviewer"]["memory"]["recalled"]
    assert recalled and "recalled: nothing (no memory past its inputs)" in classic
    assert all(f"recalled {node}:" in topological for node in recalled)
    assert f"verdict: {_review(arms['classic'])['verdict']}" in classic
    assert f"verdict: {_review(arms['topological'])['verdict']}" in topological


def test_the_closing_sentence_names_what_was_recalled_and_what_each_concluded(
    shown, chosen, arms, recorded
):
    _, out = shown
    case, text = chosen.case, prose(out)
    changed = text.split("What memory changed ", 1)[1].split(" One case is not", 1)[0]
    topo = arms["topological"]
    returned = [
        m["node_id"]
        for e in topo.log
        if isinstance(e, ToolCallMade) and e.node_id == "reviewer"
        for m in e.result.get("matches", [])
    ]
    recalled = list(dict.fromkeys([*topo.outputs["reviewer"]["memory"]["recalled"], *returned]))
    direct = list(arms["classic"].state.predecessors("reviewer"))
    only = [n for n in recalled if n not in direct]
    assert case.flawed in only  # what memory gave the reviewer: the flawed branch among them
    marked = [f"{n} (the flawed branch)" if n == case.flawed else n for n in only]
    assert changed.startswith(
        f"In held-out case {case.id} ({case.flaw} flaw in {case.flawed}), the topological "
        f"reviewer recalled {and_list(marked)}, which the classic reviewer's direct input "
        f"({and_list(direct)}) did not contain, and concluded {_review(topo)['verdict']}"
    )
    named = score_review(case, _review(topo)).named
    assert f"its gaps naming {and_list(list(named))}" in changed
    assert f"the planted {case.flaw} flaw caught" in changed
    assert f"the classic reviewer concluded {_review(arms['classic'])['verdict']}" in changed
    assert f"the planted {case.flaw} flaw missed" in changed
    assert changed.endswith(".") and not re.search(r"[.;:]\s+[A-Z]", changed)  # one sentence
    topological = recorded["table"]["arms"]["topological"]
    assert (
        f"topological detection {topological['detection']:.2f}, "
        f"false alarm {topological['false_alarm']:.2f}" in text
    )


def test_a_second_compare_replays_into_new_threads_and_thread_is_refused(shown, chosen):
    db, _ = shown
    again = prose(demo("--compare", db=db))
    base = f"heldout-{chosen.case.id}"
    assert f"already hold a run: replaying into new threads, {base}-2-classic and" in again
    assert f"thread {base}-2-classic" in again and f"events in thread {base}-2-topological" in again
    done = subprocess.run(
        [sys.executable, "-m", "cortex_agents", "demo", "--compare", "--thread", "t", "--db", db],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "--thread" in done.stderr
