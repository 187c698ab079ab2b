"""Typed projections (seed 001, F7): declared in the wire, used by the stage's recall and its tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from cortex_agents.errors import InvalidArgument, InvalidWire, UnknownProjection
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    MemoryHandle,
    MemorySnapshot,
    Projection,
    Topological,
)
from cortex_agents.persistence import memory_saver
from cortex_agents.runtime import Runtime, StageContext, WireBuilder, load_wire
from cortex_agents.tools import make_memory_query_tool
from tests.support.helpers import at, call_memory_tool, node


class Analysis(BaseModel):
    claim_ref: str
    finding: str
    details: str = ""


HEADLINE = Projection.of_fields("headline", Analysis, ["claim_ref", "finding"])
PRESETS = BUILTIN_PRESETS.with_projections(HEADLINE)


def _analysis(ref: str, finding: str, details: str) -> dict:
    return {
        "contract": "analysis",
        "value": {"claim_ref": ref, "finding": finding, "details": details},
    }


@pytest.fixture
def snapshot() -> MemorySnapshot:
    nodes = [
        node("planner", output={"contract": "plan", "value": {"claim": "selection bias"}}),
        node("analyst-a", minute=1, output=_analysis("c1", "trial gains", "selection bias")),
        node("analyst-b", minute=2, output=_analysis("c2", "selection bias", "trial gains")),
        node("reviewer", status="running", minute=3),
    ]
    edges = [
        ("planner", "analyst-a"),
        ("planner", "analyst-b"),
        ("analyst-a", "reviewer"),
        ("analyst-b", "reviewer"),
    ]
    return MemorySnapshot.of(nodes, edges, at(4))


def test_a_projection_keeps_declared_fields_and_refuses_unknown_ones():
    assert HEADLINE.extractor(_analysis("c1", "f", "d")).projected == {
        "claim_ref": "c1",
        "finding": "f",
    }
    with pytest.raises(InvalidArgument, match="distinct fields of `Analysis`"):
        Projection.of_fields("bad", Analysis, ["claim_ref", "verdict"])
    with pytest.raises(InvalidArgument, match="non-empty list"):
        Projection.of_fields("bad", Analysis, [])
    with pytest.raises(UnknownProjection, match="known projections: 'headline'"):
        PRESETS.projections.resolve("nope")


def test_recall_reads_and_shows_only_the_projected_slice(snapshot):
    """The unprojected `details` field never reaches the body, the score or the match."""
    strategy = Topological(preset="reviewer", projection="headline", scorer="jaccard")
    handle = MemoryHandle(snapshot, "reviewer", presets=PRESETS, strategy=strategy)
    ranked = handle.recall(text="selection bias")
    assert [m.node_id for m in ranked] == ["analyst-b", "analyst-a"]
    assert ranked[0].output == {"claim_ref": "c2", "finding": "selection bias"}
    assert ranked[1].semantic == 0.0  # its `details` say "selection bias": not projected
    assert ranked[1].body_text == "c1 trial gains"
    whole = MemoryHandle(snapshot, "reviewer", strategy=Topological(preset="reviewer"))
    assert whole.recall(text="selection bias")[0].output["value"]["details"]


def test_the_tool_of_a_projected_stage_records_and_shows_the_projection(snapshot):
    strategy = Topological(preset="reviewer", projection="headline", scorer="jaccard")
    handle = MemoryHandle(snapshot, "reviewer", presets=PRESETS, strategy=strategy)
    tool = make_memory_query_tool(PRESETS)
    message = call_memory_tool(tool, handle, {"query_text": "selection bias"})
    assert message.status == "success"
    artifact = message.artifact
    assert artifact["query"]["projection"] == "headline"
    assert [m["projected"] for m in artifact["matches"]] == [
        {"claim_ref": "c2", "finding": "selection bias"},
        {"claim_ref": "c1", "finding": "trial gains"},
    ]
    assert 'projection="headline"' in message.content
    assert "details" not in message.content and "selection bias selection" not in message.content


def _review(ctx: StageContext) -> dict:
    return {"seen": [m.output for m in ctx.recall()]}


def _analyse(ctx: StageContext) -> dict:
    return _analysis(ctx.stage_id, f"finding of {ctx.stage_id}", "long internal notes")


def test_a_wire_declares_a_projection_and_its_stage_recalls_through_it():
    wire = (
        WireBuilder("projected", presets=PRESETS)
        .kind("analyst", _analyse)
        .kind("reviewer", _review)
        .stage("analyst-a", "analyst")
        .stage(
            "reviewer",
            "reviewer",
            after=["analyst-a"],
            memory=Topological(preset="reviewer", projection="headline"),
        )
        .build()
    )
    result = Runtime(wire, memory_saver()).run("t", {})
    assert result.outputs["reviewer"] == {
        "seen": [{"claim_ref": "analyst-a", "finding": "finding of analyst-a"}]
    }


def test_a_wire_naming_an_unknown_projection_is_refused_with_its_location():
    builder = (
        WireBuilder("bad")
        .kind("reviewer", _review)
        .stage("reviewer", "reviewer", memory=Topological(projection="headline"))
    )
    with pytest.raises(InvalidWire) as caught:
        builder.build()
    assert [p.location for p in caught.value.problems] == ["stages[0].memory.projection"]


WIRE_TOML = """
name = "projected"
[kinds]
analyst = "kinds.py:analyse"
reviewer = "kinds.py:review"
[projections.headline]
model = "kinds.py:Analysis"
fields = [{fields}]
[[stages]]
id = "analyst-a"
kind = "analyst"
[[stages]]
id = "reviewer"
kind = "reviewer"
after = ["analyst-a"]
memory = {{ strategy = "topological", preset = "reviewer", projection = "headline" }}
"""

KINDS_PY = """
from pydantic import BaseModel

class Analysis(BaseModel):
    claim_ref: str
    finding: str
    details: str = ""

def analyse(ctx):
    return {"claim_ref": "c1", "finding": "gains", "details": "notes"}

def review(ctx):
    return {"seen": [m.output for m in ctx.recall()]}
"""


def test_a_toml_wire_declares_a_projection(tmp_path: Path):
    (tmp_path / "kinds.py").write_text(KINDS_PY)
    path = tmp_path / "wire.toml"
    path.write_text(WIRE_TOML.format(fields='"claim_ref", "finding"'))
    wire = load_wire(path)
    assert "headline" in wire.presets.projections
    result = Runtime(wire, memory_saver()).run("t", {})
    assert result.outputs["reviewer"] == {"seen": [{"claim_ref": "c1", "finding": "gains"}]}

    path.write_text(WIRE_TOML.format(fields='"claim_ref", "verdict"'))
    with pytest.raises(InvalidWire) as caught:
        load_wire(path)
    assert [p.location for p in caught.value.problems] == ["projections.headline.fields"]
    assert "`Analysis` (claim_ref, details, finding)" in str(caught.value)
