"""`cortex-agents graph`: a real run with an admitted and a rejected rewrite, drawn three ways."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from PIL import Image
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.persistence import open_saver
from cortex_agents.rewrite import RewritePolicy
from cortex_agents.runtime import Runtime, StageContext, TickingClock, WireBuilder
from tests.support.helpers import T0

runner = CliRunner()
THREAD = "run-1"


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def review(ctx: StageContext) -> dict:
    """Propose one follow-up (admitted) and one node of an unregistered kind (rejected)."""
    decisions = [
        ctx.propose_rewrite(
            {
                "op": "append_after",
                "anchor": ctx.stage_id,
                "spec": {
                    "nodes": [{"id": local, "kind": kind}],
                    "edges": [],
                    "entry": [local],
                    "exit": [local],
                },
            }
        )
        for local, kind in (("followup", "worker"), ("ghost", "no-such-kind"))
    ]
    return {"decisions": [d.decision for d in decisions]}


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("graph") / "runs.db")
    wire = (
        WireBuilder("graphed")
        .kind("planner", lambda ctx: {"plan": "p"})
        .kind("reviewer", review)
        .kind("worker", lambda ctx: {"done": ctx.stage_id})
        .stage("plan", "planner")
        .stage("review", "reviewer", after=["plan"], rewrite=RewritePolicy(attempts=2))
        .stage("report", "worker", after=["review"])
        .build()
    )
    with open_saver(path) as saver:
        clock = TickingClock(T0, timedelta(milliseconds=10))
        result = Runtime(wire, saver, clock=clock).run(THREAD, {"claim": "c"})
    assert result.complete
    assert [f.decision for f in result.state.rewrites] == ["admitted", "rejected"]
    assert result.outputs["review"] == {"decisions": ["admitted", "rejected"]}
    assert result.state.watermark == 1  # the admitted rewrite is materialized, not just decided
    return path


def test_mermaid_goes_to_stdout_with_the_added_node_in_the_rewrite_class(database):
    result = invoke("graph", database, "--thread", THREAD, "--format", "mermaid")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("flowchart TD\n")
    ref = re.search(r'^\s+(n\d+)\["review:followup<br/>worker · completed<br/>rewrite #1"\]', text, re.M)  # fmt: skip
    assert ref is not None
    assert re.search(rf"^class (\S+,)?{ref[1]}(,\S+)? rewrite$", text, re.M)
    assert "vocabulary_violation" in text


def test_mermaid_with_an_output_file_writes_it_and_says_where(database, tmp_path):
    target = tmp_path / "g.mmd"
    result = invoke("graph", database, "--thread", THREAD, "--format", "mermaid", "-o", target)
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8").startswith("flowchart TD\n")
    assert str(target) in result.stdout and "flowchart" not in result.stdout


def test_png_defaults_to_the_thread_name_in_the_current_directory(database, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("graph", database, "--thread", THREAD, "--format", "png")
    assert result.exit_code == 0, result.output
    assert "run-1.png" in result.stdout
    data = (tmp_path / "run-1.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    assert 300 <= image.width <= 2000 and 4 * 64 <= image.height <= 2000  # four layers


def test_html_has_the_drawing_the_added_node_and_the_rejection(database, tmp_path):
    target = tmp_path / "page.html"
    result = invoke("graph", database, "--thread", THREAD, "--format", "html", "--output", target)
    assert result.exit_code == 0, result.output
    page = target.read_text(encoding="utf-8")
    assert "<svg" in page and 'data-id="review:followup"' in page
    assert "vocabulary_violation" in page and "no-such-kind" in page
    assert "<script" not in page


def test_an_unknown_thread_fails_naming_it(database):
    result = invoke("graph", database, "--thread", "nope", "--format", "mermaid")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: no thread 'nope' in this database"


def test_a_missing_database_fails_cleanly(tmp_path):
    result = invoke("graph", tmp_path / "none.db", "--thread", THREAD)
    assert result.exit_code == 1
    assert "no database at" in result.stderr and "Traceback" not in result.output


def test_an_unknown_format_is_a_usage_error(database):
    result = invoke("graph", database, "--thread", THREAD, "--format", "gif")
    assert result.exit_code == 2
