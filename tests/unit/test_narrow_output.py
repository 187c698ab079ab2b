"""Printing for 80 columns: breaks only where chosen, commands that copy whole, near-ties named."""

from __future__ import annotations

import shlex

import pytest

from cortex_agents.cli._narrow import chain, command_lines, wrap
from cortex_agents.cli._ranking_notes import NEAR_TIE, column_legend, order_note

WEIGHTS = {"graph": 0.25, "temporal": 0.25, "semantic": 1.0}


def pasted(lines: list[str]) -> list[str]:
    """What a shell reads from pasted lines: ``\\``-continued lines joined, then split."""
    return shlex.split("\n".join(lines).replace("\\\n", " "))


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_command_wider_than_the_terminal_pastes_back_as_the_same_command(width):
    argv = [
        "cortex-agents",
        "export",
        "/tmp/pytest-of-someone/pytest-123/test_a_long_name_0/the demo.db",
        "--thread",
        "demo-2",
        "--as-seen-by",
        "reviewer",
        "-o",
        "seen.json",
    ]
    lines = command_lines(argv, width)
    assert pasted(lines) == argv
    # only an argument wider than the line itself may overrun it, alone on its line
    for line in lines:
        assert len(line) <= width or line.strip(" \\") == shlex.quote(argv[2])
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert "--thread demo-2" in "\n".join(lines)  # an option stays with its value


def test_a_command_that_fits_is_one_line():
    argv = ["cortex-agents", "inspect", "demo.db", "--thread", "demo"]
    assert command_lines(argv, 80) == ["  cortex-agents inspect demo.db --thread demo"]


def test_a_chain_breaks_before_an_arrow_never_after_one():
    text = "claim_review: planner -> three analysts -> merge -> reviewer (topological) -> rewriter"
    lines = chain(text, 80)
    assert lines == [
        "claim_review: planner -> three analysts -> merge -> reviewer (topological)",
        "  -> rewriter",
    ]
    for width in range(30, 90, 7):
        lines = chain(text, width)
        assert all(len(line) <= width and not line.endswith("->") for line in lines)
        assert " ".join(" ".join(lines).split()) == text


def test_wrap_keeps_each_unit_on_one_line_when_it_fits():
    units = ["events 26", "last event 2026-01-01T00:08:00Z", "rewrites 0"]
    lines = wrap(units, 40, sep=", ", first="    ", indent="    ")
    assert lines == ["    events 26,", "    last event 2026-01-01T00:08:00Z,", "    rewrites 0"]


def match(node_id: str, score: float, semantic: float) -> dict:
    return {
        "node_id": node_id,
        "score": score,
        "graph": 0.333,
        "temporal": 1.0,
        "semantic": semantic,
    }


def test_a_gap_under_five_percent_of_the_score_is_a_near_tie_not_an_axis():
    tie = order_note([match("analyst-b", 0.645, 0.634), match("analyst-a", 0.641, 0.628)], WEIGHTS)
    assert tie == "analyst-b and analyst-a are a near-tie: 0.645 vs 0.641, under 5% apart"
    assert "axis" not in tie
    apart = order_note([match("analyst-b", 0.70, 0.70), match("analyst-a", 0.60, 0.55)], WEIGHTS)
    assert apart == "analyst-b ranks above analyst-a mostly on the semantic axis (0.700 vs 0.550)"
    # the threshold is relative to the higher score: 0.96 of it is within, 0.94 is not
    assert "near-tie" in order_note([match("x", 1.0, 1.0), match("y", 0.96, 0.9)], WEIGHTS)
    assert "near-tie" not in order_note([match("x", 1.0, 1.0), match("y", 0.94, 0.9)], WEIGHTS)
    assert NEAR_TIE == 0.05
    assert order_note([match("x", 1.0, 1.0)], WEIGHTS) == ""


def test_the_legend_says_how_graph_follows_from_hops_under_each_prior():
    hop = column_legend("reviewer", "hop_decay")
    assert hop == "hops = edges from reviewer; graph = 1/(1 + hops); key = the branch (routing key)"
    assert len(hop) <= 80
    assert "random walk from reviewer" in column_legend("reviewer", "influence")
