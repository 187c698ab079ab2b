"""A recorded malformed tool call, kept as a test fixture (never in the demo).

``tests/replay/cassettes/malformed_tool_call.yaml`` was recorded like the
demo scenarios, against the local llama.cpp server, with every answer capped
at 24 tokens (``FIXTURES["malformed_tool_call"]``): the reviewer's forced
memory query arrives as unterminated JSON. The loop must answer it with a
tool error the model reads, run nothing, and let the stage finish; and the
answers cut short are outputs the run says were inferred from text.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from cortex_agents._demo import FIXTURES, is_malformed_call, recorded_model, run_recorded
from cortex_agents.persistence import memory_saver
from cortex_agents.substrate import ToolCallMade

FOLDER = Path(__file__).parent / "cassettes"
FIXTURE = FIXTURES["malformed_tool_call"]


@pytest.fixture(scope="module")
def replayed():
    return run_recorded(FIXTURE, memory_saver(), folder=FOLDER)


def requests() -> list[dict]:
    cassette = yaml.safe_load((FOLDER / "malformed_tool_call.yaml").read_text())
    return [json.loads(i["request"]["body"]) for i in cassette["interactions"]]


def test_the_fixture_was_recorded_cut_short():
    assert recorded_model(FIXTURE, FOLDER).max_tokens == FIXTURE.max_tokens == 24
    assert all(b["max_tokens"] == 24 for b in requests())


def test_a_malformed_call_came_back_as_a_tool_error_and_the_stage_finished(replayed):
    assert replayed.complete and not replayed.failures
    refused = [
        e for e in replayed.log if isinstance(e, ToolCallMade) and is_malformed_call(e.result)
    ]
    assert refused, "the fixture holds a malformed call"
    call = refused[0]
    error = json.loads(call.result["content"])["error"]
    assert error["code"] == "invalid_argument" and "nothing ran" in error["message"]
    assert set(call.arguments) == {"raw"}  # what the model sent, kept as text
    assert replayed.state.nodes[call.node_id].status == "completed"
    # the next request of that stage carried the error back, offered no tool, and asked
    # for the answer in its schema
    stage_prompt = {"reviewer": "You review", "rewriter": "You write the final report"}
    turns = [
        b for b in requests() if b["messages"][0]["content"].startswith(stage_prompt[call.node_id])
    ]
    follow_up = turns[1]
    assert follow_up["messages"][-1]["role"] == "tool"
    assert "invalid_argument" in follow_up["messages"][-1]["content"]
    assert "tools" not in follow_up and "response_format" in follow_up


def test_answers_cut_short_are_marked_inferred_and_the_demo_would_say_so(replayed):
    from rich.console import Console

    from cortex_agents.cli._demo_view import report_panels

    inferred = [s for s, out in replayed.outputs.items() if out["value"]["parsed"] is False]
    assert inferred  # cut at 24 tokens: not the JSON asked for
    console = Console(width=80, record=True, file=io.StringIO())
    for panel in report_panels(replayed):
        console.print(panel)
    shown = " ".join(console.export_text().replace("│", " ").split())
    assert "inferred from its text" in shown
