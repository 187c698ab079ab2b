"""Extractors: envelope peeling, routing keys, body text, typed projection."""

from pydantic import BaseModel

from cortex_agents.memory import (
    ExtractedFields,
    MemorySnapshot,
    Query,
    default_extractor,
    peel_envelope,
    projection_extractor,
)
from cortex_agents.memory._engine import query_vectorised
from tests.support.helpers import at, node


def test_peels_a_single_envelope():
    assert peel_envelope({"contract": "c", "value": {"x": 1}}) == {"x": 1}


def test_peels_the_first_entry_of_a_value_set():
    output = {"values": [{"contract": "c", "value": "first"}, {"contract": "c", "value": "second"}]}
    assert peel_envelope(output) == "first"
    # the shape seed 001 mis-read as `wireValues` is not an envelope
    assert peel_envelope({"wireValues": [{"contract": "c", "value": 1}]}) == {
        "wireValues": [{"contract": "c", "value": 1}]
    }


def test_plain_outputs_pass_through():
    assert peel_envelope({"value": 1}) == {"value": 1}
    assert peel_envelope(["a"]) == ["a"]


def test_routing_key_is_the_first_non_empty_string_in_field_order():
    assert default_extractor({"claimRef": "x", "claim_ref": "y"}).routing_key == "y"
    assert default_extractor({"slot": "", "claimRef": "x", "routing_key": "z"}).routing_key == "x"
    assert default_extractor({"slot": 3, "routing_key": "z"}).routing_key == "z"
    assert default_extractor({"text": "no key"}).routing_key is None
    assert default_extractor(None) is None


def test_body_is_every_non_empty_string_leaf_in_document_order():
    output = {
        "contract": "analysis",
        "value": {
            "b": "second",
            "a": ["third", {"deep": "fourth"}, 5, ""],
            "n": None,
            "z": "fifth",
        },
    }
    fields = default_extractor(output)
    assert fields.body_text == "second third fourth fifth"


def test_both_envelope_shapes_give_the_same_fields():
    inner = {"claim_ref": "c1", "finding": "gain", "evidence": ["trial", "survey"]}
    single = default_extractor({"contract": "a", "value": inner})
    value_set = default_extractor({"values": [{"contract": "a", "value": inner}]})
    assert single == value_set == ExtractedFields("c1", "c1 gain trial survey", ("trial", "survey"))


class Finding(BaseModel):
    claim_ref: str
    headline: str
    details: str


def test_typed_projection_reads_only_the_projected_slice():
    extract = projection_extractor(Finding, lambda f: ExtractedFields(f.claim_ref, f.headline, ()))
    output = {
        "contract": "finding",
        "value": {"claim_ref": "c9", "headline": "short", "details": "long text"},
    }
    shown = {"routing_key": "c9", "body_text": "short"}
    assert extract(output) == ExtractedFields("c9", "short", (), shown)
    # outputs of another type do not decode: an empty body, and nothing of their payload shown
    other = extract({"contract": "plan", "value": {"claim": "x"}})
    assert other == ExtractedFields(None, "", (), {})


def test_typed_projection_of_a_model_slice_uses_the_default_rules():
    class Headline(BaseModel):
        slot: str
        text: str

    extract = projection_extractor(Finding, lambda f: Headline(slot=f.claim_ref, text=f.headline))
    fields = extract({"claim_ref": "c1", "headline": "gain", "details": "ignored"})
    assert fields == ExtractedFields("c1", "c1 gain", (), {"slot": "c1", "text": "gain"})


def test_typed_projection_drives_the_pipeline():
    extract = projection_extractor(Finding, lambda f: ExtractedFields(f.claim_ref, f.headline, ()))
    nodes = [
        node("analyst-a", output={"claim_ref": "c1", "headline": "gain", "details": "bias"}),
        node("analyst-b", output={"claim_ref": "c2", "headline": "bias", "details": "gain"}),
        node("reviewer"),
    ]
    snap = MemorySnapshot.of(nodes, [("analyst-a", "reviewer"), ("analyst-b", "reviewer")], at(5))
    ranked = query_vectorised(snap, "reviewer", query=Query(text="bias", extractor=extract))
    assert [(m.node_id, m.semantic) for m in ranked] == [("analyst-b", 1.0), ("analyst-a", 0.0)]
    assert [m.routing_key for m in ranked] == ["c2", "c1"]
    # the match carries the slice, never the full artifact (seed 001, F7)
    assert ranked[0].output == {"routing_key": "c2", "body_text": "bias"}
