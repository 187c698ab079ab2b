"""Bounds and run-consistency of snapshot files (issue 14, D4-D6): every hostile file is a
located problem, never a crash, a hang or an accepted file that import then refuses."""

from __future__ import annotations

import copy
import json

import pytest

from cortex_agents.errors import InvalidSnapshot
from cortex_agents.snapshotfile import (
    SnapshotLimits,
    check_identifier,
    document_events,
    event_count,
    parse_snapshot,
    salvage_snapshot,
    validate_snapshot,
)
from cortex_agents.substrate import SubstrateLog
from tests.unit.test_snapshot_file import minimal


def with_(path: str, value) -> dict:
    data = copy.deepcopy(minimal())
    *parents, last = path.split("/")
    target = data
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value
    return data


def nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def text_of(data) -> str:
    return data if isinstance(data, str) else json.dumps(data)


def raw_number(literal: str) -> str:
    """The minimal document with ``literal`` spliced in as node 0's output (not via json.dumps)."""
    return json.dumps(with_("nodes/0/output", {"n": "@"})).replace('"@"', literal)


HOSTILE = {
    "5,000-digit integer": (raw_number("9" * 5000), "nodes[0].output.n: number 9999"),
    "5,000-digit float": (raw_number("1." + "0" * 5000), "nodes[0].output.n: number 1.00"),
    "1e400": (raw_number("1e400"), "nodes[0].output.n: number 1e400 is out of range"),
    "-1e400": (raw_number("-1e400"), "nodes[0].output.n: number -1e400 is out of range"),
    "integer beyond 64 bits": (raw_number(str(2**64)), "nodes[0].output: must hold integers"),
    "nesting 1,000": (raw_number('{"a":' * 1000 + "1" + "}" * 1000), "document: nests 100"),
    "nesting 100,000": ("[" * 100_000 + "]" * 100_000, "document: nests 100000 levels"),
    "payload nesting 129": (with_("nodes/0/output", nested(129)), "nodes[0].output: must nest"),
    "lone surrogate in output": (
        json.dumps(with_("nodes/0/output", {"t": "@"})).replace('"@"', '"\\ud800"'),
        "nodes[0].output.t: must not contain lone surrogates",
    ),
    "lone surrogate in a key": (
        json.dumps(with_("nodes/0/output", {"@": 1})).replace('"@"', '"\\udfff"'),
        "nodes[0].output: key",
    ),
    "NUL in an id": (with_("nodes/2/id", "c\x00"), "nodes[2].id: must not contain control"),
    "NUL in a kind": (with_("nodes/0/kind", "plan\x00ner"), "nodes[0].kind: must not contain"),
    "control character in a tag": (with_("nodes/1/tags", ["x\x1b[31m"]), "nodes[1].tags[0]:"),
    "over-long id": (with_("nodes/2/id", "c" * 300), "nodes[2].id: must be at most 256"),
    "timestamp Z then NUL": (
        with_("nodes/0/captured_at", "2026-01-01T00:00:00Z\x00"),
        "nodes[0].captured_at: must be an ISO 8601 timestamp",
    ),
    "entry_time Z then NUL": (
        with_("entry_time", "2026-01-01T00:10:00Z\x00"),
        "entry_time: must be an ISO 8601 timestamp",
    ),
    "timestamp beyond year 9999 in UTC": (
        with_("nodes/0/completed_at", "9999-12-31T23:59:59-14:00"),
        "nodes[0].completed_at: must be an instant between",
    ),
    "entry_time before year 1 in UTC": (
        with_("entry_time", "0001-01-01T00:00:00+14:00"),
        "entry_time: must be an instant between",
    ),
    "attempts 100000": (with_("nodes/0/attempts", 100_000), "nodes[0].attempts: must be at most"),
    "attempts 10^9": (with_("nodes/0/attempts", 10**9), "nodes[0].attempts: must be at most"),
    "completed with 0 attempts": (
        with_("nodes/0/attempts", 0),
        "nodes[0].attempts: must be at least 1 for a completed node",
    ),
    "pending with attempts": (
        with_("nodes/2/status", "pending") | {},
        "nodes[2].attempts",
    ),
    "completed without completed_at": (
        with_("nodes/1/completed_at", None),
        "nodes[1].completed_at: is required for a completed node",
    ),
    "running with completed_at": (
        with_("nodes/2/completed_at", "2026-01-01T00:03:00Z"),
        "nodes[2].completed_at: must be null for a running node",
    ),
    "output on a running node": (
        with_("nodes/2/output", {"early": True}),
        "nodes[2].output: must be null for a running node",
    ),
    "error on a completed node": (
        with_("nodes/0/error", "boom"),
        "nodes[0].error: must be null for a completed node",
    ),
    "pending parent of a completed node": (
        with_("nodes/0/status", "pending") | {"_fix": 0},
        "edges[0]: `b` is completed but its input `a` is pending",
    ),
    "empty graph": (with_("nodes", []) | {"edges": []}, "nodes: must hold at least one node"),
    "NaN": ('{"schema_version": "1", "x": NaN}', "document: NaN is not valid JSON"),
}


def _fix_pending_parent(data: dict) -> dict:
    if data.pop("_fix", None) is not None:
        node = data["nodes"][0]
        node["completed_at"] = None
        node["output"] = None
    return data


def _fix_pending_with_attempts(data: dict) -> dict:
    if data["nodes"] and data["nodes"][-1]["status"] == "pending":
        data["nodes"][-1]["attempts"] = 2
    return data


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_are_located_problems_for_validate_and_import(case):
    data, expected = HOSTILE[case]
    if isinstance(data, dict):
        data = _fix_pending_with_attempts(_fix_pending_parent(copy.deepcopy(data)))
    text = text_of(data)
    found = [str(p) for p in validate_snapshot(text)]
    assert any(p.startswith(expected) for p in found), found
    with pytest.raises(InvalidSnapshot) as caught:
        parse_snapshot(text)
    assert [str(p) for p in caught.value.problems] == found  # the same report, the same verdict


def _rewrite(**fields) -> dict:
    base = {
        "rewrite_id": 1,
        "proposer": "b",
        "proposal": {"op": "append_after", "anchor": "b"},
        "decision": "admitted",
    }
    return base | fields


@pytest.mark.parametrize(
    ("rewrites", "expected"),
    [
        ([_rewrite(proposal={})], "rewrites[0].proposal: must not be empty for an admitted"),
        ([_rewrite(rewrite_id=2)], "rewrites[0].rewrite_id: must be 1"),
        ([_rewrite(), _rewrite(rewrite_id=1, key=None)], "rewrites[1].rewrite_id: must be 2"),
        ([_rewrite(rewrite_id=None, decision="rejected")], "rewrites[0].code: a rejected"),
        ([_rewrite(code="policy_rejected")], "rewrites[0].code: must be null"),
        ([_rewrite(diff={"nodes": ["x"]})], "rewrites[0].diff: diff.nodes must be a list"),
        ([_rewrite(diff={"nodes": [{"id": "ghost"}]})], "rewrites[0].diff: diff.nodes names"),
        ([_rewrite(diff={"retired": ["a"]})], "rewrites[0].diff: diff.retired names 'a'"),
        ([_rewrite(key="k"), _rewrite(rewrite_id=2, key="k")], "rewrites[1].key:"),
        ([_rewrite(rewrite_id=10**30)], "rewrites[0]"),
    ],
)
def test_rewrite_histories_a_run_cannot_produce_are_refused(rewrites, expected):
    text = json.dumps(with_("rewrites", rewrites))
    found = [str(p) for p in validate_snapshot(text)]
    assert any(p.startswith(expected) for p in found), found
    with pytest.raises(InvalidSnapshot):
        parse_snapshot(text)


def test_a_retired_node_with_an_edge_is_refused():
    data = with_("nodes/2/status", "retired")
    data["nodes"][2]["attempts"] = 0
    found = [str(p) for p in validate_snapshot(json.dumps(data))]
    assert found == ["edges[1]: `c` is retired; a retired node has no edges"]


def test_counts_are_bounded_before_anything_is_built():
    small = SnapshotLimits(max_nodes=2, max_edges=1, max_events=5)
    found = [str(p) for p in validate_snapshot(json.dumps(minimal()), limits=small)]
    assert found == [
        "nodes: holds 3 items; at most 2 allowed",
        "edges: holds 2 items; at most 1 allowed",
    ]
    events = [
        str(p)
        for p in validate_snapshot(json.dumps(minimal()), limits=SnapshotLimits(max_events=5))
    ]
    assert events == ["document: imports as 10 events; at most 5 allowed"]
    size = [
        str(p)
        for p in validate_snapshot(json.dumps(minimal()), limits=SnapshotLimits(max_bytes=100))
    ]
    assert size[0].startswith("document: is ") and "at most 100 allowed" in size[0]


def test_what_validate_accepts_folds_into_exactly_the_counted_events():
    document = parse_snapshot(json.dumps(with_("nodes/0/attempts", 3)))
    events = document_events(document)
    assert len(events) == event_count(document) == 14
    log = SubstrateLog().appended(events)
    assert log.state.nodes["a"].attempts == 3 and log.state.nodes["c"].attempts == 1


def test_forensic_reading_leaves_out_exactly_the_rows_with_problems():
    data = minimal()
    data["edges"].append({"source": "a", "target": "ghost"})
    data["edges"].append({"source": "c", "target": "a"})
    data["nodes"].append(
        {"id": "d\x00", "kind": "x", "status": "pending", "captured_at": "2026-01-01T00:00:00Z"}
    )
    data["rewrites"] = [_rewrite(proposer="nobody")]
    salvage = salvage_snapshot(json.dumps(data))
    assert [(o.location, o.category) for o in salvage.left_out] == [
        ("nodes[3]", "invalid"),
        ("edges[2]", "dangling"),
        ("edges[3]", "cycle"),
        ("rewrites[0]", "orphan"),
    ]
    assert [n.id for n in salvage.document.nodes] == ["a", "b", "c"]
    assert len(salvage.document.edges) == 2
    assert json.loads(salvage.left_out[1].row_json()) == {"source": "a", "target": "ghost"}
    assert salvage.left_out[0].row_json() == (
        '{"id":"d\\u0000","kind":"x","status":"pending","captured_at":"2026-01-01T00:00:00Z"}'
    )


def test_a_node_whose_every_edge_was_left_out_is_reported_as_an_orphan():
    data = minimal()
    data["nodes"][0]["status"] = "finished"  # a: invalid, so a -> b is left out with it
    data["edges"][1]["target"] = "ghost"  # b -> ghost: dangling
    salvage = salvage_snapshot(json.dumps(data))
    assert [str(p) for p in salvage.orphans] == [
        "nodes[1]: orphan: every edge of 'b' was left out; it stands alone"
    ]
    assert [(o.location, o.category) for o in salvage.left_out] == [
        ("nodes[0]", "invalid"),
        ("edges[0]", "dangling"),
        ("edges[1]", "dangling"),
    ]


def test_a_long_cycle_and_a_long_chain_are_read_in_linear_time():
    n = 20_000
    nodes = [
        {"id": f"n{i}", "kind": "k", "status": "pending", "captured_at": "2026-01-01T00:00:00Z"}
        for i in range(n)
    ]
    chain = [{"source": f"n{i}", "target": f"n{i + 1}"} for i in reversed(range(n - 1))]
    base = minimal() | {"nodes": nodes, "edges": chain}
    assert validate_snapshot(json.dumps(base)) == []  # reversed order: quadratic before
    ring = base | {"edges": [*chain, {"source": f"n{n - 1}", "target": "n0"}]}
    found = [str(p) for p in validate_snapshot(json.dumps(ring))]
    assert len(found) == 1 and found[0].startswith(f"edges[{n - 1}]: closes a cycle n")
    assert "more)" in found[0]  # a long cycle is shown shortened


@pytest.mark.parametrize("value", ["", "a\x00", "tab\there", "x" * 257, "\ud800", 5])
def test_identifiers_must_be_printable_bounded_strings(value):
    with pytest.raises(ValueError, match="`thread`"):
        check_identifier(value, "thread")
