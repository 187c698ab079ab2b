"""The command line: `memory query` and `validate`, output shapes and failures."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.memory import BUILTIN_PRESETS, WalkSpec, Weights
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.snapshotfile import load_snapshot

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def fanout_file(tmp_path):
    """DESIGN §4's fan-out fixture as a hand-written file."""

    def node(node_id, kind, status="completed"):
        return {
            "id": node_id,
            "kind": kind,
            "status": status,
            "captured_at": "2026-01-01T00:00:00Z",
            "completed_at": "2026-01-01T00:05:00Z" if status == "completed" else None,
            "output": {"contract": "note", "value": {"text": f"{node_id} wrote this"}}
            if status == "completed"
            else None,
            "tags": [],
        }

    data = {
        "schema_version": "1",
        "run_id": "fanout",
        "entry_time": "2026-01-01T00:10:00Z",
        "nodes": [
            node("planner", "planner"),
            node("analyst-a", "analyst"),
            node("analyst-b", "analyst"),
            node("analyst-c", "analyst"),
            node("reviewer", "reviewer", "running"),
        ],
        "edges": [
            {"source": "planner", "target": t} for t in ("analyst-a", "analyst-b", "analyst-c")
        ]
        + [{"source": s, "target": "reviewer"} for s in ("analyst-a", "analyst-b", "analyst-c")],
    }
    path = tmp_path / "fanout.json"
    path.write_text(json.dumps(data))
    return path


def test_json_output_shape_and_exact_values(fanout_file):
    result = invoke("memory", "query", fanout_file, "--origin", "reviewer", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [list(row) for row in rows] == [
        ["node_id", "score", "hops", "graph", "temporal", "semantic"]
    ] * 4
    expected = query_vectorised(
        load_snapshot(fanout_file).to_memory_snapshot(),
        "reviewer",
        BUILTIN_PRESETS.spec("default"),
        BUILTIN_PRESETS.query("default"),
    )
    assert [(r["node_id"], r["score"], r["graph"]) for r in rows] == [
        (m.node_id, m.score, m.graph) for m in expected
    ]


def test_scorer_flag_picks_the_semantic_scorer(fanout_file):
    def semantic(*flags):
        result = invoke(
            "memory",
            "query",
            fanout_file,
            "--origin",
            "reviewer",
            "--json",
            "--text",
            "analyst-b text",
            "--support",
            "0",
            *flags,
        )  # fmt: skip  (no edge support: each node's own likeness only)
        assert result.exit_code == 0, result.output
        return {r["node_id"]: r["semantic"] for r in json.loads(result.stdout)}

    jaccard = semantic("--scorer", "jaccard")
    # "analyst-b wrote this" vs "analyst-b text": tokens {analyst, b, wrote, this} / {analyst, b, text}
    assert jaccard["analyst-b"] == pytest.approx(2 / 5)
    assert jaccard["planner"] == 0.0
    default = semantic()  # the preset's scorer: wordllama+bm25
    assert default == semantic("--scorer", "wordllama+bm25") != jaccard
    wordllama, bm25 = semantic("--scorer", "wordllama"), semantic("--scorer", "bm25")
    assert default["planner"] > 0.0 == bm25["planner"]  # embeddings see some likeness
    assert default["planner"] == pytest.approx(2 / 3 * wordllama["planner"])
    result = invoke("memory", "query", fanout_file, "--origin", "reviewer", "--scorer", "tf-idf")
    assert result.exit_code == 1
    assert "unknown scorer 'tf-idf'" in result.output and "'jaccard'" in result.output


def test_flags_override_the_preset(fanout_file):
    graph_only = ["--weights", "graph=1,temporal=0,semantic=0", "--json"]
    influence = json.loads(
        invoke(
            "memory", "query", fanout_file, "--origin", "reviewer", "--prior", "influence",
            *graph_only,
        ).stdout
    )  # fmt: skip
    assert [r["node_id"] for r in influence] == ["planner", "analyst-a", "analyst-b", "analyst-c"]
    assert influence[0]["graph"] == pytest.approx(0.7225, abs=1e-15)
    assert all(r["score"] == r["graph"] for r in influence)
    decay = json.loads(
        invoke(
            "memory",
            "query",
            fanout_file,
            "--origin",
            "reviewer",
            "--prior",
            "hop_decay",
            *graph_only,
        ).stdout
    )
    assert [r["node_id"] for r in decay] == ["analyst-a", "analyst-b", "analyst-c", "planner"]
    limited = json.loads(
        invoke(
            "memory", "query", fanout_file, "--origin", "reviewer", "--limit", "1", "--json"
        ).stdout
    )
    assert len(limited) == 1


def test_partial_weights_keep_the_presets_other_axes(fanout_file):
    result = invoke(
        "memory",
        "query",
        fanout_file,
        "--origin",
        "reviewer",
        "--preset",
        "reviewer",
        "--weights",
        "semantic=2",
        "--text",
        "planner",
        "--json",
    )
    spec = BUILTIN_PRESETS.spec("reviewer", weights=Weights(graph=0.25, temporal=0.25, semantic=2))
    expected = query_vectorised(
        load_snapshot(fanout_file).to_memory_snapshot(),
        "reviewer",
        spec,
        BUILTIN_PRESETS.query("reviewer", text="planner"),
    )
    assert expected and isinstance(spec, WalkSpec)
    assert [r["score"] for r in json.loads(result.stdout)] == [m.score for m in expected]


def test_table_output_names_the_nodes():
    result = invoke("memory", "query", EXAMPLE, "--origin", "reviewer", "--preset", "default")
    assert result.exit_code == 0
    for node_id in ("merge", "planner", "analyst-a", "analyst-b", "analyst-c"):
        assert node_id in result.stdout
    # the reviewer preset recalls evidence only: no planner, no merge
    evidence = invoke(
        "memory", "query", EXAMPLE, "--origin", "reviewer", "--preset", "reviewer", "--json"
    )
    assert {r["node_id"] for r in json.loads(evidence.stdout)} == {
        "analyst-a", "analyst-b", "analyst-c"
    }  # fmt: skip


def test_validate_accepts_a_valid_file():
    result = invoke("validate", EXAMPLE)
    assert result.exit_code == 0
    assert "valid" in result.stdout and "7 nodes, 8 edges" in result.stdout


def test_validate_reports_every_problem_with_locations(tmp_path):
    data = json.loads(EXAMPLE.read_text())
    data["edges"].append({"source": "rewriter", "target": "planner"})
    data["nodes"][1]["id"] = "planner"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = invoke("validate", bad)
    assert result.exit_code == 1
    assert "nodes[1].id: duplicate node id 'planner'" in result.stderr
    assert "cycle" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["memory", "query", "missing.json", "--origin", "x"], 1, "cannot read file"),
        (["memory", "query", EXAMPLE, "--origin", "ghost"], 1, "unknown node 'ghost'"),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--preset", "revewer"],
            1,
            "unknown preset 'revewer'",
        ),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--alpha", "2"],
            1,
            "`alpha` must be between 0 and 1",
        ),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--weights", "graf=1"],
            1,
            "`--weights`",
        ),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--weights", "graph=x"],
            1,
            "must be a number",
        ),
        (
            [
                "memory",
                "query",
                EXAMPLE,
                "--origin",
                "reviewer",
                "--weights",
                "graph=0,temporal=0,semantic=0",
            ],
            1,
            "at least one axis",
        ),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--time-scale", "0"],
            1,
            "`time_scale`",
        ),
        (
            ["memory", "query", EXAMPLE, "--origin", "reviewer", "--direction", "sideways"],
            2,
            "sideways",
        ),
        (["memory", "query", EXAMPLE, "--origin", "reviewer", "--limit", "0"], 2, "--limit"),
        (["memory", "query", EXAMPLE], 2, "--origin"),
    ],
)
def test_bad_input_exits_non_zero_with_one_clear_message(args, code, message):
    result = invoke(*args)
    assert result.exit_code == code, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_invalid_json_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "1",')
    result = invoke("memory", "query", bad, "--origin", "x")
    assert result.exit_code == 1
    assert "invalid JSON" in result.stderr


def test_console_entry_point_runs_as_a_module():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cortex_agents",
            "memory",
            "query",
            str(EXAMPLE),
            "--origin",
            "reviewer",
            "--preset",
            "reviewer",
            "--limit",
            "2",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = query_vectorised(
        load_snapshot(EXAMPLE).to_memory_snapshot(),
        "reviewer",
        BUILTIN_PRESETS.spec("reviewer", limit=2),
        BUILTIN_PRESETS.query("reviewer"),
    )
    rows = json.loads(done.stdout)
    assert [row["node_id"] for row in rows] == [m.node_id for m in expected]
    assert {row["node_id"] for row in rows} <= {"analyst-a", "analyst-b", "analyst-c"}


def test_version_prints_the_installed_version_and_runs_no_command():
    import importlib.metadata

    import cortex_agents

    result = invoke("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"cortex-agents {cortex_agents.__version__}\n"
    # the module's version is the distribution's (pyproject.toml), not a second truth
    assert cortex_agents.__version__ == importlib.metadata.version("cortex-agents")
