"""Prompt files: shipped, overridable, strategy-specific, byte-stable, and tool mentions gated."""

from __future__ import annotations

import pytest

from cortex_agents.bundled import bundled_path
from cortex_agents.errors import InvalidArgument
from cortex_agents.stages.prompts import load_prompt, prompt_for, render

KINDS = ("planner", "analyst", "merge", "reviewer", "rewriter")


def test_every_kind_has_a_prompt_and_strategy_variants_win():
    for kind in KINDS:
        assert prompt_for(kind, "classic")
    assert prompt_for("reviewer", "topological") == load_prompt("reviewer.topological")
    assert prompt_for("planner", "topological") == load_prompt("planner")  # falls back to <kind>.md


def test_only_the_nudges_name_their_tools():
    names = sorted(p.stem for p in bundled_path("prompts").glob("*.md"))
    mentioning = [n for n in names if "cortex_memory_query" in load_prompt(n)]
    assert mentioning == ["memory_tool_nudge"]  # stage prompts never mention a tool themselves
    rewriting = [n for n in names if "propose_rewrite" in load_prompt(n)]
    assert rewriting == ["rewrite_tool_nudge"]


def test_a_folder_or_the_environment_overrides_a_prompt(tmp_path, monkeypatch):
    (tmp_path / "planner.md").write_text("mine: $branch_count")
    assert load_prompt("planner", folder=tmp_path) == "mine: $branch_count"
    monkeypatch.setenv("CORTEX_PROMPTS_DIR", str(tmp_path))
    assert prompt_for("planner", "classic") == "mine: $branch_count"
    assert load_prompt("analyst").startswith(
        "You are an analyst"
    )  # not overridden: the shipped one


def test_rendering_needs_every_placeholder_and_leaves_json_braces_alone():
    text = render('{"claim_ref": "$claim_ref"}', claim_ref="c1")
    assert text == '{"claim_ref": "c1"}'
    with pytest.raises(InvalidArgument, match=r"\$claim_ref"):
        render("part $claim_ref")
    with pytest.raises(InvalidArgument, match="no prompt file"):
        load_prompt("nope")
