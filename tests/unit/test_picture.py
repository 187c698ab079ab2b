"""Pictures of a run: the render model, the layered layout, Mermaid, HTML and PNG."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from cortex_agents.picture import layout, picture_of, to_html, to_mermaid, to_png, to_svg
from cortex_agents.picture._mermaid import escape_label
from cortex_agents.rewrite import RewritePolicy, admit, materialize
from cortex_agents.substrate import (
    EdgeAdded,
    GraphState,
    NodeScheduled,
    RewriteAdmitted,
    RewriteBudgetSet,
    RewriteRejected,
    StageCompleted,
    StageFailed,
    StageStarted,
    fold,
)
from tests.support.helpers import at

SCRIPT = "<script>alert('x')</script>"
VOCABULARY = {"planner": {}, "analyst": {}, "merge": {}, "writer": {}}
FANOUT = [("plan", "a1"), ("plan", "a2"), ("a1", "merge"), ("a2", "merge"), ("merge", "report")]
BUDGET = {"nodes": 3, "edges": 32, "depth": 6, "breadth": 4, "operations": 4}


def scheduled(*nodes: tuple[str, str], edges=()) -> list:
    return [NodeScheduled(node_id=n, kind=k, at=at(0)) for n, k in nodes] + [
        EdgeAdded(source=s, target=t, at=at(0)) for s, t in edges
    ]


def propose(state: GraphState, proposer: str, raw: dict, attempt: int) -> GraphState:
    """Decide ``raw`` as the runtime's rewrite session does, and fold the decision."""
    fact = admit(
        state,
        raw,
        proposer=proposer,
        vocabulary=VOCABULARY,
        policy=RewritePolicy(attempts=4),
        granted=BUDGET,
        attempt=attempt,
        key=f"{proposer}#1:p{attempt}",
    )
    if fact.decision == "admitted":
        return fold([RewriteAdmitted(fact=fact, at=at(2)), *materialize(fact, at(2))], state)
    return fold([RewriteRejected(fact=fact, at=at(2))], state)


def spec(*local: tuple[str, str], edges=()) -> dict:
    ids = [n for n, _ in local]
    return {
        "nodes": [{"id": n, "kind": k} for n, k in local],
        "edges": [list(e) for e in edges],
        "entry": ids[:1],
        "exit": ids[-1:],
    }


def build() -> GraphState:
    """A fan-out run: one branch settled (its output holds markup), one failed, then
    ``plan`` replaced ``merge`` (retired) with two nodes, appended one after ``report``,
    and had two proposals rejected (budget; an unregistered kind written as a script)."""
    events = [
        RewriteBudgetSet(budget=BUDGET, at=at(0)),
        *scheduled(
            ("plan", "planner"),
            ("a1", "analyst"),
            ("a2", "analyst"),
            ("merge", "merge"),
            ("report", "writer"),
            edges=FANOUT,
        ),
        StageStarted(node_id="plan", at=at(1)),
        StageCompleted(node_id="plan", at=at(1), output={"plan": "p"}),
        StageStarted(node_id="a1", at=at(1)),
        StageCompleted(node_id="a1", at=at(1), output={"text": SCRIPT}),
        StageStarted(node_id="a2", at=at(1)),
        StageFailed(node_id="a2", at=at(1), error="boom <b>bold</b>"),
    ]
    s = fold(events)
    replace = {"op": "expand_node", "mode": "replace", "anchor": "merge"}
    s = propose(s, "plan", {**replace, "spec": spec(("m1", "merge"), ("m2", "merge"), edges=[("m1", "m2")])}, 1)  # fmt: skip
    s = propose(s, "plan", {"op": "append_after", "anchor": "report", "spec": spec(("audit", "writer"))}, 2)  # fmt: skip
    s = propose(s, "plan", {"op": "append_after", "anchor": "report", "spec": spec(("x", "writer"))}, 3)  # fmt: skip
    return propose(s, "plan", {"op": "append_after", "anchor": "report", "spec": spec(("y", SCRIPT))}, 4)  # fmt: skip


@pytest.fixture(scope="module")
def state() -> GraphState:
    """The run :func:`build` makes."""
    return build()


def test_the_fixture_has_what_the_pictures_must_show(state):
    assert [f.decision for f in state.rewrites] == ["admitted", "admitted", "rejected", "rejected"]
    assert [f.code for f in state.rewrites[2:]] == [
        "rewrite_budget_exceeded",
        "vocabulary_violation",
    ]
    assert state.nodes["merge"].status == "retired"


def test_the_render_model_marks_rewrite_added_and_retired_nodes(state):
    picture = picture_of(state, title="t")
    added = {n.id: n.rewrite_id for n in picture.nodes if n.rewrite_id is not None}
    assert added == {"merge:m1": 1, "merge:m2": 1, "report:audit": 2}
    assert picture.node("merge").retired and picture.node("merge").retired_by == 1
    assert [(p.proposer, p.code, p.check) for p in picture.rejected] == [
        ("plan", "rewrite_budget_exceeded", "budget.nodes"),
        ("plan", "vocabulary_violation", "vocabulary.spec.nodes[0].kind"),
    ]
    assert [(r.rewrite_id, r.op, r.mode, r.anchor) for r in picture.admitted] == [
        (1, "expand_node", "replace", "merge"),
        (2, "append_after", None, "report"),
    ]


def test_an_admitted_rewrite_not_yet_materialized_is_listed_as_not_applied(state):
    assert all(r.applied for r in picture_of(state).admitted)
    s = fold(scheduled(("plan", "planner"), ("next", "writer"), edges=[("plan", "next")]))
    raw = {"op": "append_after", "anchor": "next", "spec": spec(("more", "writer"))}
    fact = admit(s, raw, proposer="plan", vocabulary=VOCABULARY, policy=RewritePolicy(), granted=BUDGET)  # fmt: skip
    picture = picture_of(fold([RewriteAdmitted(fact=fact, at=at(1))], s))
    assert [(r.rewrite_id, r.applied, r.nodes) for r in picture.admitted] == [
        (1, False, ("next:more",))
    ]
    assert "not applied yet" in to_html(picture) and "(not applied yet)" in to_mermaid(picture)
    assert "next:more" not in {n.id for n in picture.nodes}


def test_a_node_tagged_by_a_rewrite_counts_as_added_even_without_its_fact():
    events = scheduled(("a", "k"), ("a:x", "k"), edges=[("a", "a:x")])
    events[1] = NodeScheduled(node_id="a:x", kind="k", at=at(0), tags=("rewrite-7",))
    assert picture_of(fold(events)).node("a:x").rewrite_id == 7


def test_every_edge_goes_down_a_layer_and_retired_nodes_are_apart(state):
    picture = picture_of(state)
    shape = layout(picture)
    layer = shape.layer_of()
    assert picture.edges and all(layer[s] < layer[t] for s, t in picture.edges)
    assert shape.retired == ("merge",) and "merge" not in layer
    assert sorted(n for row in shape.layers for n in row) == sorted(
        n.id for n in picture.nodes if not n.retired
    )
    assert layer["plan"] == 0 and layer["report"] == layer["merge:m2"] + 1  # longest paths


def test_barycenter_sweeps_undo_a_crossing_and_ties_keep_scheduling_order():
    crossed = fold(
        scheduled(
            ("s1", "k"), ("s2", "k"), ("t2", "k"), ("t1", "k"), edges=[("s1", "t1"), ("s2", "t2")]
        )
    )
    assert layout(picture_of(crossed)).layers == (("s1", "s2"), ("t1", "t2"))
    tied = fold(scheduled(("s", "k"), ("y", "k"), ("x", "k"), edges=[("s", "x"), ("s", "y")]))
    assert layout(picture_of(tied)).layers == (("s",), ("y", "x"))


def test_the_same_state_draws_the_same_bytes(state):
    first, second = picture_of(state, title="t"), picture_of(build(), title="t")
    assert first == second and layout(first) == layout(second)
    assert to_mermaid(first) == to_mermaid(second)
    assert to_html(first) == to_html(second)
    assert to_png(first) == to_png(second)


def _refs(mermaid: str) -> dict[str, str]:
    """Mermaid node ref -> the node id its label starts with."""
    return {m[1]: m[2] for m in re.finditer(r'^\s+(n\d+)\["([^<"]+)<br/>', mermaid, re.M)}


def _classed(mermaid: str, name: str) -> set[str]:
    refs = _refs(mermaid)
    members = re.findall(rf"^class (\S+) {name}$", mermaid, re.M)
    return {refs[r] for line in members for r in line.split(",")}


def test_mermaid_classes_rewrite_nodes_retired_nodes_and_lists_rejections(state):
    mermaid = to_mermaid(picture_of(state, title="t"))
    assert mermaid.startswith("flowchart TD\n")
    assert _classed(mermaid, "rewrite") == {"merge:m1", "merge:m2", "report:audit"}
    assert _classed(mermaid, "retired") == {"merge"}
    assert _classed(mermaid, "failed") == {"a2"}
    assert "classDef rewrite " in mermaid and "classDef retired " in mermaid
    assert "rewrite #1" in mermaid and "rewrite #2" in mermaid
    comments = [line for line in mermaid.splitlines() if line.startswith("%% rejected")]
    assert len(comments) == 2 and "rewrite_budget_exceeded (budget.nodes)" in comments[0]
    assert 'subgraph rejected_proposals["rejected proposals"]' in mermaid
    assert "<script>" not in mermaid  # the kind named in the second rejection is escaped
    edges = re.findall(r"^\s+(n\d+) --> (n\d+)$", mermaid, re.M)
    refs = _refs(mermaid)
    assert {(refs[s], refs[t]) for s, t in edges} == set(picture_of(state).edges)


def test_mermaid_labels_cannot_break_out_of_their_quotes():
    assert escape_label('a"b<c>#d&e`\nf') == "a#quot;b#lt;c#gt;#35;d#amp;e#96; f"
    odd = fold(scheduled(('say "hi" #1', "k<i>")))
    line = next(x for x in to_mermaid(picture_of(odd)).splitlines() if x.startswith("    n0["))
    assert line == '    n0["say #quot;hi#quot; #35;1<br/>k#lt;i#gt; · pending"]'


def test_html_is_self_contained_and_escapes_run_data(state):
    page = to_html(picture_of(state, title="t <b>"))
    assert page.count("<script") == 0
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # output and reason
    assert "boom &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<title>t &lt;b&gt;</title>" in page
    assert "<svg" in page and 'marker-end="url(#arrow)"' in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "rewrite_budget_exceeded" in page and "budget.nodes" in page
    assert "expand_node (replace) at merge" in page
    assert page.count('class="node status-') == len(state.nodes)
    assert page.count(' rewrite" data-id=') == 3


def test_svg_strikes_retired_nodes_and_badges_added_ones(state):
    svg = to_svg(picture_of(state))
    retired = re.search(r'<g class="node status-retired" data-id="merge">.*?</g>', svg, re.S)
    assert retired and 'text-decoration="line-through"' in retired.group(0)
    added = re.search(r'<g class="node status-pending rewrite" data-id="report:audit">.*?</g>', svg, re.S)  # fmt: skip
    assert added and ">rewrite #2</text>" in added.group(0)


def test_png_is_an_image_of_the_layout(state):
    picture = picture_of(state)
    data = to_png(picture)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and not image.info  # no metadata: no time, no software
    assert image.width >= 3 * 150 and image.height > 4 * 64  # three wide, four layers plus retired
    # the rewrite outline colour is drawn somewhere
    assert (0x7C, 0x3A, 0xED) in {c for _, c in image.getcolors(1 << 16)}


def test_an_empty_graph_still_draws():
    empty = picture_of(GraphState(), title="nothing")
    assert layout(empty).layers == () and to_mermaid(empty).startswith("flowchart TD")
    assert "<svg" in to_html(empty) and to_png(empty).startswith(b"\x89PNG")


def test_model_and_layout_are_pure():
    code = (
        "import sys, cortex_agents.picture._model, cortex_agents.picture._layout,"
        " cortex_agents.picture._geometry, cortex_agents.picture._mermaid;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain_core', 'sqlite3', 'psycopg', 'typer', 'rich', 'PIL'});"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    root = Path(__file__).parents[2] / "cortex_agents" / "picture"
    for name in ("_model.py", "_layout.py", "_geometry.py", "_mermaid.py", "_svg.py", "_html.py"):
        text = (root / name).read_text(encoding="utf-8")
        for needle in ("datetime.now", "time.time(", "os.environ", "open(", "random."):
            assert needle not in text, f"{name} uses {needle}"
