"""The snapshot file: strict validation with locations, canonical round trip."""

import copy
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidSnapshot
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.snapshotfile import (
    dump_snapshot,
    load_snapshot,
    parse_snapshot,
    validate_snapshot,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"


def minimal() -> dict:
    return {
        "schema_version": "1",
        "run_id": "r",
        "entry_time": "2026-01-01T00:10:00Z",
        "nodes": [
            {
                "id": "a",
                "kind": "planner",
                "status": "completed",
                "captured_at": "2026-01-01T00:00:00Z",
                "completed_at": "2026-01-01T00:01:00Z",
                "output": {"text": "hello"},
                "tags": [],
            },
            {
                "id": "b",
                "kind": "analyst",
                "status": "completed",
                "captured_at": "2026-01-01T00:01:00Z",
                "completed_at": "2026-01-01T00:02:00Z",
                "output": None,
                "tags": ["x"],
            },
            {
                "id": "c",
                "kind": "reviewer",
                "status": "running",
                "captured_at": "2026-01-01T00:02:00Z",
            },
        ],
        "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "c"}],
        "rewrites": [],
    }


def problems_of(data) -> list[str]:
    text = data if isinstance(data, str) else json.dumps(data)
    return [str(p) for p in validate_snapshot(text)]


def test_minimal_document_is_valid_and_queryable():
    assert problems_of(minimal()) == []
    document = parse_snapshot(json.dumps(minimal()))
    ranked = query_vectorised(document.to_memory_snapshot(), "c")
    assert [m.node_id for m in ranked] == ["b", "a"]


def mutate(path: str, value):
    """A copy of the minimal document with one value replaced (``None`` deletes)."""
    data = copy.deepcopy(minimal())
    *parents, last = path.split("/")
    target = data
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is None and not last.isdigit():
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("{not json", "line 1 column 2: invalid JSON"),
        ("[]", "document: must be a JSON object"),
        (
            '{"schema_version": "1", "schema_version": "1"}',
            "document: duplicate key 'schema_version'",
        ),
        ('{"schema_version": "1", "x": NaN}', "document: NaN is not valid JSON"),
        (mutate("schema_version", None), "schema_version: is required"),
        (mutate("schema_version", "2"), "schema_version: unknown schema version '2'"),
        (mutate("entry_time", None), "entry_time: Field required"),
        (mutate("entry_time", "yesterday"), "entry_time: must be an ISO 8601 timestamp"),
        (mutate("entry_time", "2026-01-01T00:10:00"), "entry_time: must carry a timezone"),
        (mutate("nodes/1/status", "done"), "nodes[1].status: Input should be"),
        (mutate("nodes/1/id", 7), "nodes[1].id: Input should be a valid string"),
        (mutate("nodes/1/id", ""), "nodes[1].id: must not be empty"),
        (mutate("nodes/0/colour", "red"), "nodes[0].colour: Extra inputs are not permitted"),
        (
            mutate("nodes/0/captured_at", "2026-13-01T00:00:00Z"),
            "nodes[0].captured_at: must be an ISO 8601",
        ),
        (
            mutate("nodes/1/completed_at", "2025-01-01T00:00:00Z"),
            "nodes[1].completed_at: must not precede",
        ),
        (mutate("nodes/1/id", "a"), "nodes[1].id: duplicate node id 'a' (first at nodes[0])"),
        (mutate("edges/1/target", "ghost"), "edges[1].target: unknown node 'ghost'"),
        (
            mutate("edges/1", {"source": "a", "target": "b"}),
            "edges[1]: duplicate edge (first at edges[0])",
        ),
        (
            mutate("edges/1", {"source": "b", "target": "a"}),
            "edges[1]: closes a cycle b -> a -> b",
        ),
        (mutate("edges/1", {"source": "b", "target": "b"}), "edges[1]: closes a cycle b -> b"),
        (mutate("edges/0", {"source": "a"}), "edges[0].target: Field required"),
        (
            mutate(
                "rewrites",
                [{"rewrite_id": None, "proposer": "z", "proposal": {}, "decision": "rejected"}],
            ),
            "rewrites[0].proposer: unknown node 'z'",
        ),
        (
            mutate(
                "rewrites",
                [{"rewrite_id": 1, "proposer": "a", "proposal": {}, "decision": "maybe"}],
            ),
            "rewrites[0].decision: Input should be 'admitted' or 'rejected'",
        ),
    ],
)
def test_each_malformed_kind_is_reported_with_its_location(data, expected):
    found = problems_of(data)
    assert any(p.startswith(expected) for p in found), found
    with pytest.raises(InvalidSnapshot):
        parse_snapshot(data if isinstance(data, str) else json.dumps(data))


def test_every_problem_is_reported_not_only_the_first():
    data = mutate("edges/1/target", "ghost")
    data["nodes"][0]["status"] = "done"
    data["nodes"].append(
        {"id": "b", "kind": "x", "status": "pending", "captured_at": "2026-01-01T00:00:00Z"}
    )
    found = problems_of(data)
    assert len(found) == 3, found


def test_missing_file_is_a_problem_not_a_traceback(tmp_path):
    with pytest.raises(InvalidSnapshot, match="cannot read file"):
        load_snapshot(tmp_path / "nope.json")


def test_canonical_dump_round_trips_byte_for_byte(tmp_path):
    original = EXAMPLE.read_text(encoding="utf-8")
    assert dump_snapshot(load_snapshot(EXAMPLE)) == original
    # a scrambled but equivalent document dumps to the same canonical bytes
    data = json.loads(original)
    data["nodes"].reverse()
    data["edges"].reverse()
    assert dump_snapshot(parse_snapshot(json.dumps(data))) == original


def test_dump_keeps_output_key_order_because_body_text_follows_it():
    data = minimal()
    data["nodes"][0]["output"] = {"z": "first", "a": "second"}
    text = dump_snapshot(parse_snapshot(json.dumps(data)))
    assert text.index('"z": "first"') < text.index('"a": "second"')


def test_a_rewrite_budget_is_optional_and_checked():
    from cortex_agents.snapshotfile import dump_snapshot, parse_snapshot

    base = json.loads(EXAMPLE.read_text())
    assert "rewrite_budget" not in base  # files of runs without one are unchanged
    with_budget = {**base, "rewrite_budget": {"nodes": 2, "edges": 3}}
    document = parse_snapshot(json.dumps(with_budget))
    assert document.rewrite_budget == {"nodes": 2, "edges": 3}
    assert json.loads(dump_snapshot(document))["rewrite_budget"] == {"edges": 3, "nodes": 2}
    for value in ({"nodes": -1}, {"nodes": 1.5}, ["nodes"]):
        with pytest.raises(InvalidSnapshot) as error:
            parse_snapshot(json.dumps({**base, "rewrite_budget": value}))
        assert [p.location.split(".")[0] for p in error.value.problems] == ["rewrite_budget"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 150))
def test_an_exports_check_finds_what_the_full_reading_finds(seed, length):
    """``dumped=True`` (an export's check) skips what only outside text can hold and the last
    fold: on the export of any run, it reports exactly what the full reading reports."""
    from cortex_agents.snapshotfile import SnapshotDocument
    from cortex_agents.substrate import fold
    from tests.support.helpers import T0
    from tests.support.substrate import random_run

    state = fold(random_run(random.Random(seed), length))
    text = dump_snapshot(SnapshotDocument.from_state(state, T0, run_id="r"))
    full = validate_snapshot(text)
    assert validate_snapshot(text, dumped=True) == full
    if not full:  # and what it accepts, import takes: the full reading folds it
        assert parse_snapshot(text)._log is not None
