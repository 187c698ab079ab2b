"""Every shipped cassette was recorded with constrained decoding, and every replayed
structured output parses as its schema asks: none is "inferred from text"."""

from __future__ import annotations

import json

import pytest
import yaml

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import SCENARIOS, recorded_model, run_recorded
from cortex_agents.persistence import memory_saver

TITLES = {
    "You are the planner": "PlanAnswer",
    "You are an analyst": "AnalysisAnswer",
    "You merge": "MergedAnswer",
    "You review": "ReviewAnswer",
    "You write the final report": "ReportAnswer",
}


def requests(name: str) -> list[dict]:
    cassette = yaml.safe_load(bundled_path("cassettes", f"{name}.yaml").read_text())
    return [json.loads(i["request"]["body"]) for i in cassette["interactions"]]


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def scenario(request):
    chosen = SCENARIOS[request.param]
    return chosen, run_recorded(chosen, memory_saver())


def test_no_replayed_structured_output_is_inferred_from_text(scenario):
    chosen, result = scenario
    assert result.complete and not result.failures
    values = {
        stage: out["value"]
        for stage, out in result.outputs.items()
        if isinstance(out, dict) and "value" in out
    }
    assert len(values) == len(result.state.nodes)  # every stage is an LLM stage with an output
    inferred = sorted(stage for stage, value in values.items() if value.get("parsed") is not True)
    assert inferred == [], f"{chosen.name}: outputs inferred from text: {inferred}"
    for stage, value in values.items():
        if "report" in value:
            assert value["report"].strip(), f"{chosen.name}: {stage}'s report is empty"


def test_every_answer_turn_asked_for_its_stages_schema_and_no_tool_turn_did(scenario):
    chosen, _ = scenario
    assert recorded_model(chosen).structured_output == "json_object"  # llama-cpp-python's form
    bodies = requests(chosen.name)
    answers = [b for b in bodies if "tools" not in b]
    assert answers and all("response_format" in b for b in answers)
    assert not any("response_format" in b for b in bodies if "tools" in b)
    for body in answers:
        system = body["messages"][0]["content"]
        title = next(t for prefix, t in TITLES.items() if system.startswith(prefix))
        form = body["response_format"]
        assert form["type"] == "json_object" and form["schema"]["title"] == title
        assert form["schema"]["additionalProperties"] is False


def test_no_recorded_tool_call_is_malformed(scenario):
    chosen, _ = scenario
    for body in requests(chosen.name):
        for message in body["messages"]:
            if message["role"] == "tool":
                assert "not a valid JSON object" not in message["content"], chosen.name
