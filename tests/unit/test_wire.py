"""Wires: the builder, validation before anything runs, wire files, the pure scheduler."""

from __future__ import annotations

import random
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidArgument, InvalidWire
from cortex_agents.memory import Classic, Topological
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import WireBuilder, load_wire
from cortex_agents.runtime._scheduler import next_frontier, wire_events
from cortex_agents.substrate import StageCompleted, StageFailed, StageStarted, SubstrateLog
from tests.support.helpers import at


def noop(ctx):
    return {}


def base() -> WireBuilder:
    return WireBuilder("w").kind("planner", noop).kind("analyst", noop).stage("p", "planner")


def problems(builder: WireBuilder) -> list[str]:
    with pytest.raises(InvalidWire) as caught:
        builder.build()
    return [str(p) for p in caught.value.problems]


def test_a_valid_wire_keeps_its_declaration():
    wire = base().stage("a", "analyst", after=["p"], memory=Topological(preset="analyst")).build()
    assert [s.id for s in wire.stages] == ["p", "a"]
    assert wire.edges == (("p", "a"),)
    assert wire.order() == ["p", "a"]
    assert wire.budget.as_dict() == {
        "nodes": 16,
        "edges": 32,
        "depth": 6,
        "breadth": 4,
        "operations": 4,
    }


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b.stage("a", "auditor", after=["p"]), "stages[1].kind: unknown kind 'auditor'"),
        (
            lambda b: b.stage("a", "analyst", after=["ghost"]),
            "edges[0].source: unknown stage 'ghost'",
        ),
        (lambda b: b.stage("p", "analyst"), "stages[1].id: duplicate stage id 'p'"),
        (lambda b: b.stage("a", "analyst", after=["p"]).edge("a", "p"), "edges: cycle a -> p -> a"),
        (lambda b: b.stage("a:b", "analyst"), "stages[1].id: must match"),
        (
            lambda b: b.stage("a", "analyst", memory=Topological(preset="nope")),
            "stages[1].memory.preset: unknown preset 'nope'",
        ),
        (
            lambda b: b.stage("a", "analyst", memory=Topological(past_boundary="merge")),
            "stages[1].memory.past_boundary: unknown kind 'merge'",
        ),
        (lambda b: b.budget(nodes=-1), "budget.nodes: must be an integer >= 0"),
    ],
)
def test_invalid_wires_are_rejected_with_the_location(change, expected):
    found = problems(change(base()))
    assert any(p.startswith(expected) for p in found), found


def test_rewrite_created_nodes_run_like_the_first_declared_stage_of_their_kind():
    reviewer = Topological(preset="reviewer")
    wire = (
        base()
        .kind("reviewer", noop)
        .stage(
            "r",
            "reviewer",
            after=["p"],
            memory=reviewer,
            config={"tools": {"max_rounds": 1}},
            rewrite=RewritePolicy(),
        )
        .build()
    )
    made = wire.spec_for("r:again", "reviewer")
    assert (made.memory, made.rewrite, dict(made.config)) == (reviewer, None, {})
    assert wire.spec_for("r", "reviewer") is wire.stage("r")  # a declared stage is itself
    assert wire.spec_for("x:y", "analyst").memory == Classic()  # no stage declares analysts
    assert wire.vocabulary() == {
        "planner": {},
        "analyst": {},
        "reviewer": {"tools": {"max_rounds": 1}},
    }


def test_a_stage_rewrite_declaration_must_be_a_policy():
    found = problems(base().stage("a", "analyst", rewrite={"forms": ["append_after"]}))
    assert any(p.startswith("stages[1].rewrite: must be a RewritePolicy") for p in found), found
    with pytest.raises(InvalidArgument, match=r"rewrite\.forms"):
        RewritePolicy(forms=("append_after", "append_after"))


def test_every_problem_is_reported_at_once():
    found = problems(base().stage("a", "auditor", after=["ghost"]).stage("a", "analyst"))
    assert len(found) == 3, found


def test_toml_and_yaml_wires(tmp_path):
    (tmp_path / "kinds.py").write_text("def plan(ctx):\n    return {}\n")
    (tmp_path / "w.toml").write_text(
        textwrap.dedent(
            """
            name = "t"
            on_failure = "continue"
            [kinds]
            planner = "kinds.py:plan"
            [[stages]]
            id = "p"
            kind = "planner"
            [[stages]]
            id = "q"
            kind = "planner"
            after = ["p"]
            memory = { strategy = "topological", preset = "mine", limit = 3 }
            rewrite = { forms = ["append_after"], attempts = 2 }
            [budget]
            nodes = 2
            [presets.mine]
            direction = "descendants"
            weights = { temporal = 0 }
            """
        )
    )
    wire = load_wire(tmp_path / "w.toml")
    assert (wire.name, wire.on_failure, wire.budget.nodes) == ("t", "continue", 2)
    assert wire.presets.spec("mine").direction == "descendants"
    assert wire.stage("q").memory == Topological(preset="mine", limit=3)
    assert wire.stage("q").rewrite == RewritePolicy(forms=("append_after",), attempts=2)
    assert wire.stage("p").rewrite is None and wire.rewrites
    (tmp_path / "w.yaml").write_text(
        "name: y\nkinds: {planner: 'kinds.py:plan'}\nstages: [{id: p, kind: planner}]\n"
    )
    assert load_wire(tmp_path / "w.yaml").name == "y"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:plan"\n[[stages]]\nid = "p"\n',
            "stages[0].kind: Field required",
        ),
        (
            'name = "t"\nkinds = {}\nstages = []\ncolour = 1\n',
            "colour: Extra inputs are not permitted",
        ),
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:nope"\n[[stages]]\nid = "p"\nkind = "planner"\n',
            "kinds.planner",
        ),
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:plan"\n[[stages]]\nid = "p"\nkind = "x"\n',
            "unknown kind 'x'",
        ),
        ('name = "t"\nkinds = {}\nstages = []\n[presets.bad]\nalpha = 2.0\n', "presets.bad.alpha"),
        ("name = [", "cannot be parsed"),
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:plan"\n[[stages]]\nid = "p"\n'
            'kind = "planner"\nrewrite = { forms = ["delete_node"] }\n',
            "stages[0].rewrite.forms[0]",
        ),
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:plan"\n[[stages]]\nid = "p"\n'
            'kind = "planner"\nrewrite = { attempts = 0 }\n',
            "stages[0].rewrite.attempts",
        ),
        (
            'name = "t"\n[kinds]\nplanner = "kinds.py:plan"\n[[stages]]\nid = "p"\n'
            'kind = "planner"\nmemory = { preset = "reviewer" }\n',
            "stages[0].memory.preset: is only allowed with strategy = 'topological'",
        ),
    ],
)
def test_wire_file_errors_name_the_field(tmp_path, text, expected):
    (tmp_path / "kinds.py").write_text("def plan(ctx):\n    return {}\n")
    (tmp_path / "w.toml").write_text(text)
    with pytest.raises(InvalidWire) as caught:
        load_wire(tmp_path / "w.toml")
    assert expected in str(caught.value)


def test_python_wire_files_must_define_wire(tmp_path):
    (tmp_path / "w.py").write_text("x = 1\n")
    with pytest.raises(InvalidWire, match="must define `wire`"):
        load_wire(tmp_path / "w.py")
    with pytest.raises(InvalidWire, match="no such file"):
        load_wire(tmp_path / "missing.py")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_incremental_scheduling_agrees_with_a_full_scan(seed):
    rng = random.Random(seed)
    builder = WireBuilder("r").kind("k", noop)
    n = rng.randint(1, 25)
    for i in range(n):
        after = [f"s{j}" for j in range(i) if rng.random() < 0.2]
        builder.stage(f"s{i}", "k", after=after)
    wire = builder.build()
    log = SubstrateLog().appended(wire_events(wire, SubstrateLog().state, at(0)))
    scanned = len(log)
    frontier = next_frontier(log, since=None)
    t = 1
    while frontier.ready:
        batch = []
        for stage in frontier.ready:
            t += 1
            outcome = (
                StageFailed(node_id=stage, at=at(t), error="x")
                if rng.random() < 0.1
                else StageCompleted(node_id=stage, at=at(t))
            )
            batch += [StageStarted(node_id=stage, at=at(t)), outcome]
        log = log.appended(batch)
        incremental = next_frontier(log, since=scanned)
        full = next_frontier(log, since=None)
        assert incremental.ready == full.ready
        assert set(incremental.failed) <= set(full.failed)
        scanned, frontier = len(log), incremental
    settled = {n for n, node in log.state.nodes.items() if node.status in ("completed", "failed")}
    blocked = {
        n
        for n, node in log.state.nodes.items()
        if node.status == "pending"
        and any(log.state.nodes[p].status != "completed" for p in log.state.predecessors(n))
    }
    assert settled | blocked == set(log.state.nodes)  # nothing runnable was left behind


def test_retry_makes_failed_stages_ready_again():
    wire = base().stage("a", "analyst", after=["p"]).build()
    log = SubstrateLog().appended(wire_events(wire, SubstrateLog().state, at(0)))
    log = log.appended(
        [StageStarted(node_id="p", at=at(1)), StageFailed(node_id="p", at=at(2), error="boom")]
    )
    assert next_frontier(log, since=None).failed == ("p",)
    assert next_frontier(log, since=None).ready == ()
    assert next_frontier(log, since=None, retry_failed=True).ready == ("p",)


def test_a_wire_file_reports_every_problem_at_once(tmp_path):
    (tmp_path / "kinds.py").write_text("def plan(ctx):\n    return {}\nnot_a_function = 3\n")
    (tmp_path / "w.toml").write_text(
        textwrap.dedent(
            """
            name = "t"
            [kinds]
            planner = "nofile.py:plan"
            analyst = "kinds.py:nofunc"
            merge = "kinds.py:not_a_function"
            [[stages]]
            id = "p"
            kind = "planner"
            memory = { strategy = "topological", preset = "missing" }
            [[stages]]
            id = "g"
            kind = "ghost"
            after = ["zz"]
            """
        )
    )
    with pytest.raises(InvalidWire) as caught:
        load_wire(tmp_path / "w.toml")
    where = [p.location for p in caught.value.problems]
    for expected in ("kinds.planner", "kinds.analyst", "kinds.merge"):
        assert expected in where, where
    text = str(caught.value)
    assert "unknown kind 'ghost'" in text and "'zz'" in text and "missing" in text
    assert "unknown kind 'planner'" not in text  # a kind that failed to load is still declared


def test_a_kind_module_that_raises_on_import_is_a_wire_problem(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "boom_kinds.py").write_text("raise RuntimeError('boom at import')\n")
    for reference, said in [
        ("boom_kinds:plan", "RuntimeError: boom at import"),
        (".relative:plan", "cannot import '.relative'"),
        ("cortex_agents_missing_module:plan", "ModuleNotFoundError"),
    ]:
        (tmp_path / "w.toml").write_text(
            f'name = "t"\n[kinds]\nplanner = "{reference}"\n[[stages]]\nid = "p"\nkind = "planner"\n'
        )
        with pytest.raises(InvalidWire) as caught:
            load_wire(tmp_path / "w.toml")
        assert "kinds.planner" in str(caught.value) and said in str(caught.value)


def test_a_bad_structured_output_setting_is_refused_when_the_wire_is_built():
    found = problems(base().stage("a", "analyst", after=["p"], config={"structured_output": "xml"}))
    assert found == [
        "stages[1].config.structured_output: must be one of "
        "['auto', 'json_schema', 'json_object', 'off'] (got 'xml')"
    ]
    for form in ("auto", "json_schema", "json_object", "off"):
        wire = base().stage("a", "analyst", after=["p"], config={"structured_output": form}).build()
        assert wire.stages[1].config["structured_output"] == form
