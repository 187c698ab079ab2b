"""One limit per value: what a run stores, a snapshot file carries, and ``export`` never
writes a file ``import`` refuses (issue 23, items 3 and 6).

* the largest string a run may store goes through run, export, import and
  validate; one character more fails the stage, naming the bound;
* a value stored before the bound existed (written below the boundary, as an
  older version did) is reported by ``validate DB`` and refused by ``export``,
  which writes nothing;
* ids and tags a file cannot carry are refused where they enter (wire, rewrite);
* a rewrite budget with a dimension that is not one of the five is refused at
  every door: the wire, a wire file, a snapshot file, and import.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.errors import InvalidArgument, InvalidSnapshot, InvalidWire
from cortex_agents.persistence import export_document, import_document, open_saver
from cortex_agents.runtime import Runtime, WireBuilder, load_wire
from cortex_agents.snapshotfile import (
    SnapshotDocument,
    checked_dump,
    document_events,
    load_snapshot,
    parse_snapshot,
    validate_snapshot,
    write_snapshot,
)
from cortex_agents.substrate import NodeScheduled, SubstrateLog, fold
from cortex_agents.substrate._bounds import MAX_ID_CHARS, MAX_STRING_CHARS, MAX_TAGS
from cortex_agents.substrate._events import check_event
from tests.support.helpers import T0, at

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
runner = CliRunner()


def cli(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def clock():
    ticks = iter(range(10_000))
    return lambda: at(next(ticks))


def text_wire(chars: int):
    return (
        WireBuilder("limits")
        .kind("write", lambda ctx: {"text": "x" * chars, "n": 2**63 - 1})
        .kind("read", lambda ctx: {"seen": len(ctx.inputs["w"]["text"])})
        .stage("w", "write")
        .stage("r", "read", after=["w"])
        .on_failure("continue")
        .build()
    )


def test_the_largest_string_a_run_stores_exports_imports_and_validates(tmp_path):
    db, copy, out = tmp_path / "run.db", tmp_path / "copy.db", tmp_path / "run.json"
    with open_saver(db) as saver:
        result = Runtime(text_wire(MAX_STRING_CHARS), saver, clock=clock()).run("t")
    assert result.outputs["r"] == {"seen": MAX_STRING_CHARS} and not result.failures
    assert cli("validate", db, "--thread", "t")[0] == 0
    assert cli("export", db, "--thread", "t", "-o", out)[0] == 0
    assert cli("validate", out)[0] == 0
    assert cli("import", out, copy, "--thread", "t")[0] == 0
    assert cli("validate", copy, "--thread", "t")[0] == 0
    document = load_snapshot(out)
    (written,) = [n for n in document.nodes if n.id == "w"]
    assert len(written.output["text"]) == MAX_STRING_CHARS


def test_one_character_more_fails_the_stage_naming_the_bound(tmp_path):
    db, out = tmp_path / "run.db", tmp_path / "run.json"
    with open_saver(db) as saver:
        result = Runtime(text_wire(MAX_STRING_CHARS + 1), saver, clock=clock()).run("t")
        state = saver.substrate({"configurable": {"thread_id": "t"}}).state
    failure = dict(result.failures)["w"]
    assert f"at most {MAX_STRING_CHARS} characters (got {MAX_STRING_CHARS + 1})" in failure
    assert state.nodes["w"].status == "failed" and state.nodes["w"].output is None
    # nothing was stored that a file cannot carry: the thread exports and imports
    assert cli("export", db, "--thread", "t", "-o", out)[0] == 0
    assert cli("import", out, tmp_path / "copy.db", "--thread", "t")[0] == 0


def test_a_value_stored_before_the_bound_is_reported_and_never_exported(tmp_path):
    db, out = tmp_path / "old.db", tmp_path / "old.json"
    huge = "y" * (MAX_STRING_CHARS + 5)
    example = parse_snapshot(EXAMPLE.read_text())
    nodes = tuple(
        replace(n, output={"text": huge}) if n.id == "planner" else n for n in example.nodes
    )
    document = replace(example, nodes=nodes, _log=None)
    with open_saver(db) as saver:
        with pytest.raises(InvalidArgument, match="at most 1000000 characters"):
            import_document(saver, "refused", document)  # the boundary holds for import too
        # as a version without the bound stored it: the log taken as given, below the boundary
        events = document_events(document)
        legacy = replace(document, _log=SubstrateLog.of_folded(events, fold(events)))
        import_document(saver, "t", legacy)
    code, output = cli("validate", db, "--thread", "t")
    assert code == 1 and f"has {len(huge)} characters; at most {MAX_STRING_CHARS}" in output
    code, output = cli("export", db, "--thread", "t", "-o", out)
    assert code == 1 and "nothing written" in output and not out.exists()
    with open_saver(db) as saver:
        stored = export_document(saver, "t")  # still readable and inspectable
        assert [n.output for n in stored.nodes if n.id == "planner"] == [{"text": huge}]
        with pytest.raises(InvalidSnapshot, match="at most 1000000 allowed"):
            checked_dump(stored)
        with pytest.raises(InvalidSnapshot):
            write_snapshot(stored, out)
    assert not out.exists()


def test_ids_and_tags_a_file_cannot_carry_are_refused_where_they_enter():
    long_id = "s" * (MAX_ID_CHARS + 1)
    builders = {
        "stages[0].id": lambda b: b.stage(long_id, "k"),
        "stages[0].tags[0]": lambda b: b.stage("a", "k", tags=["bad\x00tag"]),
        "stages[0].tags": lambda b: b.stage("a", "k", tags=[f"t{i}" for i in range(MAX_TAGS + 1)]),
        "stages[0].config": lambda b: b.stage("a", "k", config={"c": "z" * (MAX_STRING_CHARS + 1)}),
    }
    for location, build in builders.items():
        with pytest.raises(InvalidWire) as error:
            build(WireBuilder("w").kind("k", lambda ctx: {})).build()
        assert location in [p.location for p in error.value.problems]
    with pytest.raises(InvalidArgument, match=r"node_scheduled\.node_id"):
        check_event(NodeScheduled(node_id=long_id, kind="k", at=T0))
    with pytest.raises(InvalidArgument, match="control characters"):
        check_event(NodeScheduled(node_id="a", kind="k\x07", at=T0))


def test_a_rewrite_whose_ids_grow_past_the_bound_is_an_invalid_rewrite():
    from cortex_agents.rewrite import DIMENSIONS, RewritePolicy, admit
    from tests.support.rewrite import VOCABULARY, graph, proposal

    anchor = "a" * (MAX_ID_CHARS - 10)  # a node a run of nested rewrites could have made
    state = graph([("planner", anchor)], completed=("planner",))
    fact = admit(
        state,
        proposal(anchor, ["longer-than-ten"]),
        proposer=anchor,
        vocabulary=VOCABULARY,
        policy=RewritePolicy(),
        granted=dict.fromkeys(DIMENSIONS, 100),
    )
    assert (fact.decision, fact.code, fact.check) == ("rejected", "invalid_rewrite", "topology.ids")
    assert f"at most {MAX_ID_CHARS}" in (fact.reason or "")
    short = admit(
        state,
        proposal(anchor, ["short"]),
        proposer=anchor,
        vocabulary=VOCABULARY,
        policy=RewritePolicy(),
        granted=dict.fromkeys(DIMENSIONS, 100),
    )
    assert short.decision == "admitted"  # an id of exactly the bound is fine


# -- rewrite_budget: five dimensions, at every door ----------------------------------------------

BOGUS = {"nodes": 2, "bogus_dim": 3}


def test_an_unknown_budget_dimension_is_refused_by_the_wire():
    with pytest.raises(InvalidWire) as error:
        WireBuilder("w").budget(**BOGUS)
    assert [p.location for p in error.value.problems] == ["budget.bogus_dim"]
    assert "nodes, edges, depth, breadth, operations" in error.value.problems[0].message


def test_an_unknown_budget_dimension_is_refused_by_a_wire_file(tmp_path):
    (tmp_path / "kinds.py").write_text("def plan(ctx):\n    return {}\n")
    (tmp_path / "w.toml").write_text(
        textwrap.dedent(
            """
            name = "t"
            [kinds]
            planner = "kinds.py:plan"
            [[stages]]
            id = "p"
            kind = "planner"
            [budget]
            nodes = 2
            bogus_dim = 3
            """
        )
    )
    with pytest.raises(InvalidWire) as error:
        load_wire(tmp_path / "w.toml")
    assert [p.location for p in error.value.problems] == ["budget.bogus_dim"]


def test_an_unknown_budget_dimension_is_refused_by_a_snapshot_file(tmp_path):
    data = {**json.loads(EXAMPLE.read_text()), "rewrite_budget": BOGUS}
    problems = validate_snapshot(json.dumps(data))
    assert [(p.location, "dimensions are nodes" in p.message) for p in problems] == [
        ("rewrite_budget.bogus_dim", True)
    ]
    path = tmp_path / "bogus.json"
    path.write_text(json.dumps(data))
    code, output = cli("import", path, tmp_path / "x.db", "--thread", "t")
    assert code == 1 and "rewrite_budget.bogus_dim" in output
    assert not (tmp_path / "x.db").exists()  # a refused import leaves nothing


def test_an_unknown_budget_dimension_is_refused_by_import(tmp_path):
    good = parse_snapshot(EXAMPLE.read_text())
    document = SnapshotDocument(
        run_id=good.run_id,
        entry_time=good.entry_time,
        nodes=good.nodes,
        edges=good.edges,
        rewrite_budget=BOGUS,
    )
    with open_saver(tmp_path / "x.db") as saver:
        with pytest.raises(InvalidArgument) as error:
            import_document(saver, "t", document)
        assert error.value.field == "rewrite_budget.bogus_dim"
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None


def test_event_dicts_entering_a_log_keep_within_the_bounds_and_stored_ones_read_as_they_are():
    from cortex_agents.substrate import append_events, event_from_dict, event_to_dict

    log = append_events(None, [event_to_dict(NodeScheduled(node_id="a", kind="k", at=T0))])
    big = NodeScheduled(node_id="b", kind="k", at=T0, config={"c": "z" * (MAX_STRING_CHARS + 1)})
    long_id = NodeScheduled(node_id="b" * (MAX_ID_CHARS + 1), kind="k", at=T0)
    for event in (big, long_id):
        with pytest.raises(InvalidArgument):
            append_events(log, [event_to_dict(event)])  # a node's update, as LangGraph hands it
        assert event_from_dict(event_to_dict(event)) == event  # a stored row: read as it is
    assert len(log) == 1
