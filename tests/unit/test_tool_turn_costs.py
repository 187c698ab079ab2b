"""tools/tool_turn_costs.py reads forced turns from a cassette and prices a cap on them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

TOOL = Path(__file__).parents[2] / "tools" / "tool_turn_costs.py"


@pytest.fixture(scope="module")
def costs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tool_turn_costs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exchange(choice: str, calls: int, tokens: int, finish: str, ms_per_token: float) -> dict:
    request = {"tool_choice": choice, "tools": [{"function": {"name": "q"}}], "max_tokens": 512}
    made = [
        {"function": {"name": "q", "arguments": json.dumps({"query_text": "x" * (10 + i)})}}
        for i in range(calls)
    ]
    response: dict[str, Any] = {
        "choices": [{"finish_reason": finish, "message": {"content": "", "tool_calls": made}}],
        "usage": {"completion_tokens": tokens},
        "timings": {
            "prompt_ms": 1000.0,
            "predicted_n": tokens,
            "predicted_ms": tokens * ms_per_token,
            "predicted_per_token_ms": ms_per_token,
        },
    }
    return {
        "request": {"body": json.dumps(request)},
        "response": {"body": {"string": json.dumps(response)}},
    }


def test_one_calls_cost_and_the_seconds_a_cap_saves_on_runaway_turns(costs, tmp_path):
    cassette = tmp_path / "c.yaml"
    interactions = [
        exchange("required", 1, 40, "tool_calls", 50.0),  # one call, stopped by itself
        exchange("required", 14, 512, "length", 60.0),  # ran on to the cap
        exchange("auto", 3, 300, "length", 60.0),  # not forced: not counted
    ]
    cassette.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    turns = costs.forced_turns(cassette)
    assert [(t["calls"], t["finish"]) for t in turns] == [(1, "tool_calls"), (14, "length")]
    tool = costs.summary(turns, 128)["q"]
    assert tool["single_call_tokens_max"] == 40
    assert tool["runaway_calls"] == [14]
    assert tool["saved_s_at_cap_128"] == round((512 - 128) * 60.0 / 1000, 1)
    assert tool["single_calls_cut_at_cap_128"] == 0
    assert costs.summary(turns, 32)["q"]["single_calls_cut_at_cap_32"] == 1
    assert costs.model_seconds(cassette) == pytest.approx(
        3 + (40 * 50 + 512 * 60 + 300 * 60) / 1000
    )
