"""``cortex-agents demo`` as a newcomer sees it: at 80 columns, from the shipped cassettes.

The command runs in a subprocess with ``COLUMNS=80`` (what a narrow terminal
gives it), and the checks are on what it printed: nothing wider than the
terminal, every score of every ranking printed whole, no HTML entity left,
the closing panel, the scenario's forced choices, and a second run that says
what it did.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from cortex_agents._demo import SCENARIOS, run_recorded
from cortex_agents.persistence import memory_saver
from cortex_agents.substrate import ToolCallMade

BOX = re.compile(r"[│┃║╭╮╰╯─━┏┓┗┛┡┩╇╈┠┨┼┿╋]")
ENTITY = re.compile(r"&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);")


def demo(*args: str, db, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run(
        [sys.executable, "-m", "cortex_agents", "demo", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "INFO" not in done.stderr  # no library's log lines (wordllama turned them on)
    return done.stdout


def prose(text: str) -> str:
    """The printed text as one line of words: box drawing gone, whitespace folded."""
    return " ".join(BOX.sub(" ", text).split())


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    return db, demo(db=db)


@pytest.fixture(scope="module")
def replayed():
    return run_recorded(SCENARIOS["claim_review"], memory_saver())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_no_scenario_prints_wider_than_80_columns_or_an_entity(name, tmp_path):
    out = demo("--scenario", name, db=tmp_path / "demo.db")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert not ENTITY.search(out), ENTITY.search(out)
    assert "what to look at" in out and "Forced by this scenario" in out


def test_every_ranking_prints_each_score_whole(first, replayed):
    _, out = first
    calls = [e for e in replayed.log if isinstance(e, ToolCallMade) and "matches" in e.result]
    assert calls, "the recording has memory queries"
    rows = [re.sub(r"\s+", " ", line).strip() for line in out.splitlines()]
    for call in calls:
        for rank, m in enumerate(call.result["matches"], 1):
            scores = " ".join(f"{m[a]:.3f}" for a in ("score", "graph", "temporal", "semantic"))
            row = f"{rank} {m['node_id']} {m['kind']} {m['hops']} {scores} {m['routing_key']}"
            assert row in rows, f"row {row!r} not printed whole"
    assert not re.search(r"\d…|…\d", out)  # no number cut by an ellipsis anywhere


def test_escaped_text_is_shown_unescaped(first):
    _, out = first
    assert not ENTITY.search(out), ENTITY.search(out)


def test_the_closing_panel_says_what_to_look_at(first, replayed):
    db, out = first
    text = prose(out)
    assert "what to look at" in text
    assert "Memory each stage had" in text
    # the wire's classic stages, then a repair's follow-up analyst when the model repaired
    kinds = {n.id: n.kind for n in replayed.state.nodes.values()}
    classic = [n for n in replayed.state.nodes if kinds[n] in ("planner", "analyst", "merge")]
    topological = [n for n in replayed.state.nodes if kinds[n] in ("reviewer", "rewriter")]
    assert f"{', '.join(classic)}: classic, their direct inputs only" in text
    assert f"{', '.join(topological)}: topological (preset reviewer, upstream_of_kind=analyst)" in (
        text
    )
    # what the reviewer's query returned and why: the filters and axes that decided it
    (call,) = [e for e in replayed.log if isinstance(e, ToolCallMade) and e.node_id == "reviewer"]
    found = ", ".join(m["node_id"] for m in call.result["matches"])
    assert call.result["matches"], "the reviewer's recorded query recalled the analysts"
    assert f"returned {found}, of {call.result['total']} candidates" in text
    assert "filters: walked ancestors; settled outputs only; kinds left out: merge, planner, " in (
        text
    )
    ranking = f"ranking: scorer {call.result['query']['scorer']}; score = (0.25·graph + "
    assert ranking + "0.25·temporal + 1·semantic) / 1.5" in text
    assert re.search(r"mostly on the (semantic|graph|temporal) axis|are a near-tie", text)
    assert f"What the runtime recorded {len(replayed.log)} events in thread demo:" in text
    assert ["cortex-agents", "inspect", str(db), "--thread", "demo"] in next_commands(out)


def next_commands(out: str) -> list[list[str]]:
    """The commands printed after "Next", as a shell reads them pasted (continuations joined)."""
    tail = out[out.rindex("\nNext\n") + len("\nNext\n") :]
    joined = tail.replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


SEEN = ("--as-seen-by", "reviewer", "-o", "seen.json")


def test_at_80_columns_no_stage_shows_a_time_and_every_next_command_pastes_whole(first):
    db, out = first
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "0.00s" not in out and not re.search(r"\d\.\d\ds\)", out)
    assert "✓ planner (planner, replayed)" in out
    assert next_commands(out) == [
        ["cortex-agents", "inspect", str(db), "--thread", "demo"],
        ["cortex-agents", "export", str(db), "--thread", "demo", *SEEN],
    ]
    # the header breaks before an arrow, never after one
    assert not any(line.rstrip().endswith("->") for line in out.splitlines())
    assert "hops = edges from reviewer; graph = 1/(1 + hops); key = the branch" in out


def test_the_forced_choices_are_stated(first, tmp_path):
    _, out = first
    for line in SCENARIOS["claim_review"].forced:
        assert line in prose(out)
    repair = prose(demo("--scenario", "claim_review_repair", db=tmp_path / "r.db"))
    assert "forced by this scenario:" in repair
    assert "the rewriter is configured repair = always" in repair
    assert "whatever the review found" in repair
    assert "rewrite history" in repair and "admitted as rewrite 1" in repair
    # the rewriter's call shows the decision it got, not an error's empty fields
    recorded = run_recorded(SCENARIOS["claim_review_repair"], memory_saver())
    added = ", ".join(n["id"] for n in recorded.state.rewrites[0].diff["nodes"])
    assert f"answer (success): admitted (rewrite 1); new nodes: {added}" in repair
    assert "None:" not in repair


def test_a_second_run_replays_into_a_new_thread_and_says_so(first):
    db, _ = first
    again = prose(demo(db=db))
    assert "thread demo in" in again and "replaying into a new thread, demo-2" in again
    assert "events in thread demo-2" in again
    shown = prose(demo("--thread", "demo", db=db))
    assert "thread demo in" in shown and "showing what was recorded (nothing replayed" in shown
    assert "LLM exchanges replayed" in shown  # the header still says where the run came from


def test_the_compare_scenario_shows_its_two_reviewers_side_by_side(tmp_path):
    out = demo("--scenario", "claim_review_compare", db=tmp_path / "c.db")
    assert max(len(line) for line in out.splitlines()) <= 80
    text = prose(out)
    assert "the same merge, two reviewers" in text
    # one header row, two columns
    assert any("reviewer-classic" in ln and "reviewer-topological" in ln for ln in out.splitlines())
    for row in ("memory", "could see", "concluded"):
        assert re.search(rf"^\W*{row}\b", out, re.MULTILINE), row
    compare = run_recorded(SCENARIOS["claim_review_compare"], memory_saver())
    topo = compare.outputs["reviewer-topological"]["memory"]["recalled"]
    assert topo and compare.outputs["reviewer-classic"]["memory"]["recalled"] == []
    classic, topological = table_columns(out)
    assert "recalled: nothing (no memory past its inputs)" in classic
    assert all(f"recalled {node}:" in topological for node in topo)
    assert "recalled" not in classic.replace("recalled: nothing", "")
    for node, column in (("reviewer-classic", classic), ("reviewer-topological", topological)):
        assert f"verdict: {compare.outputs[node]['value']['verdict']}" in column
    # one sentence in the closing panel: what the topological reviewer recalled that the
    # classic one's direct input did not contain, and what each concluded
    verdicts = {
        n: compare.outputs[n]["value"]["verdict"]
        for n in ("reviewer-classic", "reviewer-topological")
    }
    changed = text.split("What memory changed ", 1)[1].split(" Memory each stage had", 1)[0]
    returned = [
        m["node_id"]
        for e in compare.log
        if isinstance(e, ToolCallMade) and e.node_id == "reviewer-topological"
        for m in e.result.get("matches", [])
    ]
    direct = list(compare.state.predecessors("reviewer-classic"))
    only = [n for n in dict.fromkeys([*topo, *returned]) if n not in direct]
    assert set(topo) <= set(only)  # the analysts: not the classic reviewer's input (the merge)
    assert changed.startswith(
        f"reviewer-topological recalled {and_list(only)}, which reviewer-classic's direct input "
        f"({and_list(direct)}) did not contain, and concluded {verdicts['reviewer-topological']} ("
    )
    assert f"reviewer-classic concluded {verdicts['reviewer-classic']} (" in changed
    differ = verdicts["reviewer-classic"] != verdicts["reviewer-topological"]
    assert changed.endswith("the verdicts differ." if differ else "the same verdict.")


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def table_columns(out: str) -> tuple[str, str]:
    """The text of the compare table's two reviewer columns, each as one line of words."""
    left, right = [], []
    for line in out.splitlines():
        cells = line.split("│")
        if len(cells) == 5:  # │ row │ left │ right │
            left.append(cells[2])
            right.append(cells[3])
    return " ".join(" ".join(left).split()), " ".join(" ".join(right).split())
