"""``tool_turn_max_tokens`` caps the turns that force a tool, and only those, in real requests.

A real ``ChatOpenAI`` talks HTTP to a local OpenAI-compatible endpoint
(``tests/support/chat_server.py``) that records each request body; no external network.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import FIXTURES, RecordedModel, _settings
from cortex_agents.errors import InvalidArgument
from cortex_agents.evaluation._review_arms import run_review
from cortex_agents.evaluation._reviews import build_review_cases
from cortex_agents.stages._llm import build_chat_model
from cortex_agents.stages._tool_turn_cap import ForcedTurnCap
from cortex_agents.tools import ToolPolicy, run_tool_loop
from tests.support.chat_server import serve_chat

ROOT = Path(__file__).parents[2]


def _call(name: str, arguments: dict[str, Any], hit: int) -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [
            {
                "id": f"call-{hit}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def reviewer(body: dict[str, Any], hit: int) -> str | dict[str, Any]:
    """Calls the memory tool whenever offered tools, answers a review otherwise."""
    if body.get("tools"):
        return _call("cortex_memory_query", {"query_text": "store count"}, hit)
    return json.dumps(
        {"gaps": ["c1: no source"], "verdict": "needs_work", "notes": "", "cited": []}
    )


def _bodies(arm: str, settings: RecordedModel) -> list[dict[str, Any]]:
    case = build_review_cases("heldout")[0]
    with serve_chat(reviewer) as server:
        run = run_review(case, arm, dataclasses.replace(settings, base_url=server.url))
    assert run.review is not None, run.failures
    return server.bodies


SETTINGS = RecordedModel(
    base_url="",
    model="m",
    max_tokens=512,
    max_tokens_field="max_tokens",
    structured_output="json_object",
    tool_force="required",
    resend_invalid="wrapped",
)


def test_the_forced_memory_turn_carries_the_cap_and_the_answer_turn_does_not():
    plain = _bodies("topological", SETTINGS)
    capped = _bodies("topological", dataclasses.replace(SETTINGS, tool_turn_max_tokens=128))
    assert [b.get("tool_choice") for b in capped] == ["required", None]
    assert [b["max_tokens"] for b in capped] == [128, 512]
    assert [b["max_tokens"] for b in plain] == [512, 512]
    # nothing else in any request changes
    assert [{**b, "max_tokens": 0} for b in capped] == [{**b, "max_tokens": 0} for b in plain]


def test_a_run_that_forces_no_tool_is_not_capped():
    bodies = _bodies("classic", dataclasses.replace(SETTINGS, tool_turn_max_tokens=128))
    assert [b["max_tokens"] for b in bodies] == [512]


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}"


@pytest.mark.parametrize(
    ("field", "first"),
    [("max_tokens", "lookup"), ("max_tokens", "required"), ("max_completion_tokens", "lookup")],
)
def test_only_forced_turns_are_capped_in_the_models_own_cap_field(field, first):
    def answer(body: dict[str, Any], hit: int) -> str | dict[str, Any]:
        return _call("lookup", {"topic": f"t{hit}"}, hit) if body.get("tools") else "done"

    with serve_chat(answer) as server:
        model = build_chat_model(
            model="m", base_url=server.url, api_key="k", max_tokens=300, max_tokens_field=field
        )
        result = run_tool_loop(
            ForcedTurnCap(model, 64),
            [HumanMessage("look it up")],
            tools=[lookup],
            context=None,
            policy=ToolPolicy(max_rounds=2, first=first, then="auto", force="required"),
        )
    assert result.message.content == "done"
    bodies = server.bodies
    assert [b.get("tool_choice") for b in bodies] == ["required", "auto", None]
    assert [b[field] for b in bodies] == [64, 300, 300]
    other = {"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[field]
    assert not any(other in b for b in bodies)


@pytest.mark.parametrize("value", [0, -5, 513, True, 1.5, "128"])
def test_a_bad_cap_is_refused_naming_the_field(value):
    with pytest.raises(InvalidArgument) as caught:
        RecordedModel(base_url="", model="m", max_tokens=512, tool_turn_max_tokens=value)
    assert caught.value.field == "tool_turn_max_tokens"
    assert "from 1 to max_tokens (512)" in str(caught.value)


def test_settings_recorded_before_the_cap_existed_load_without_it():
    meta = json.loads((bundled_path("cassettes") / "claim_review.json").read_text())
    assert "tool_turn_max_tokens" not in meta["model"]
    assert RecordedModel(**meta["model"]).tool_turn_max_tokens is None


def test_a_scenarios_own_smaller_cap_wins_on_every_turn():
    settings = dataclasses.replace(SETTINGS, tool_turn_max_tokens=128)
    malformed = _settings(FIXTURES["malformed_tool_call"], settings)
    assert (malformed.max_tokens, malformed.tool_turn_max_tokens) == (24, None)


def _tool(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recording_clis_refuse_a_bad_cap_naming_the_flag_and_field(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        _tool("record_cassettes").main(
            [
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--out",
                str(tmp_path),
                "--tool-turn-max-tokens",
                "0",
            ]
        )
    assert stopped.value.code == 2
    assert "--tool-turn-max-tokens: `tool_turn_max_tokens`" in capsys.readouterr().err
    status = _tool("eval_reviews").main(
        [
            "--record",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--cassettes",
            str(tmp_path),
            "--tool-turn-max-tokens",
            "2048",
        ]
    )
    assert status == 1
    assert "`tool_turn_max_tokens` must be None or an integer from 1 to max_tokens (512)" in (
        capsys.readouterr().err
    )
    assert not any(tmp_path.iterdir())  # nothing recorded, nothing written
