"""`cortex-agents run` and `export --as-seen-by`: what a stage saw, reproduced exactly."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.persistence import open_saver

runner = CliRunner()
DEMO = "graphs/fanout_demo.py"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def recorded_ranking(db: str, thread: str) -> list[str]:
    with open_saver(db) as saver:
        return (
            saver.substrate({"configurable": {"thread_id": thread}})
            .state.nodes["reviewer"]
            .output["ranking"]
        )


@pytest.mark.parametrize("wire", [DEMO, "graphs/fanout_demo.toml"])
def test_as_seen_by_reproduces_the_reviewers_ranking(durable_database, tmp_path, wire):
    result = cli(
        "run",
        wire,
        "--db",
        durable_database,
        "--thread",
        "demo",
        "--input",
        '{"claim": "Tests help."}',
    )
    assert result.exit_code == 0, result.output
    assert "✓ reviewer" in result.stdout and "complete" in result.stdout
    seen = tmp_path / "seen.json"
    assert (
        cli(
            "export", durable_database, "--thread", "demo", "--as-seen-by", "reviewer", "-o", seen
        ).exit_code
        == 0
    )
    query = cli("memory", "query", seen, "--origin", "reviewer", "--preset", "reviewer", "--json")
    assert query.exit_code == 0, query.output
    ranking = [row["node_id"] for row in json.loads(query.stdout)]
    assert ranking == recorded_ranking(durable_database, "demo")
    assert len(ranking) == 3  # the reviewer preset recalls evidence: the three analysts
    # the snapshot holds only what had settled when the reviewer started
    document = json.loads(seen.read_text())
    assert {n["id"]: n["status"] for n in document["nodes"]}["reviewer"] == "pending"


def test_running_a_finished_thread_again_changes_nothing(tmp_path):
    db = str(tmp_path / "run.db")
    assert cli("run", DEMO, "--db", db, "--thread", "t").exit_code == 0
    first = cli("inspect", db, "--thread", "t", "--json").stdout
    again = cli("run", DEMO, "--db", db, "--thread", "t")
    assert again.exit_code == 0 and "✓" not in again.stdout  # nothing ran twice
    assert cli("inspect", db, "--thread", "t", "--json").stdout == first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", DEMO, "--input", "{not json"], "`--input` must be JSON"),
        (["run", "graphs/missing.py"], "no such file"),
        (
            ["export", "DB", "--thread", "demo", "--as-seen-by", "ghost", "-o", "x.json"],
            "has no recorded start",
        ),
    ],
)
def test_bad_runs_fail_with_one_message(tmp_path, args, message):
    db = str(tmp_path / "db.sqlite")
    cli("run", DEMO, "--db", db, "--thread", "demo")
    args = [db if a == "DB" else a for a in args]
    if args[0] == "run":
        args += ["--db", db]
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_failing_wire_exits_non_zero_with_the_stage_error(tmp_path):
    wire = tmp_path / "fails.py"
    wire.write_text(
        "from cortex_agents.runtime import WireBuilder\n"
        "def boom(ctx):\n    raise KeyError('missing input')\n"
        "wire = WireBuilder('fails').kind('k', boom).stage('only', 'k').build()\n"
    )
    result = cli("run", wire, "--db", tmp_path / "f.db", "--thread", "t")
    assert result.exit_code == 1
    assert "'only': KeyError: 'missing input'" in result.output


FLAKY_WIRE = (
    "from cortex_agents.runtime import WireBuilder\n"
    "def step(ctx):\n"
    "    if ctx.run_input.get('fail'):\n"
    "        raise ValueError('asked to fail')\n"
    "    return {'seen': ctx.run_input}\n"
    "wire = WireBuilder('flaky').kind('k', step).stage('only', 'k').build()\n"
)


def test_a_different_input_on_an_existing_thread_is_refused_and_nothing_runs(tmp_path):
    wire = tmp_path / "flaky.py"
    wire.write_text(FLAKY_WIRE)
    db = str(tmp_path / "db.sqlite")
    first = cli("run", wire, "--db", db, "--thread", "t", "--input", '{"fail": true}')
    assert first.exit_code == 1 and "asked to fail" in first.output
    before = cli("inspect", db, "--thread", "t", "--json").stdout
    # the first attempt failed: a new input must not be mixed into the thread
    other = cli("run", wire, "--db", db, "--thread", "t", "--input", '{"fail": false}')
    assert other.exit_code == 1
    assert "`--input` differs from the input thread 't' started with" in other.stderr
    assert "ignored" not in other.output
    assert cli("inspect", db, "--thread", "t", "--json").stdout == before  # nothing ran
    # the same input, or none, resumes the thread with the input it started with
    for args in (["--input", '{"fail": true}'], []):
        again = cli("run", wire, "--db", db, "--thread", "t", *args)
        assert again.exit_code == 1 and "asked to fail" in again.output
        assert "differs" not in again.output
    nodes = json.loads(cli("inspect", db, "--thread", "t", "--json").stdout)["nodes"]
    assert [(n["status"], n["attempts"]) for n in nodes] == [("failed", 3)]


def test_run_refuses_another_applications_sqlite_file_unless_told_to_adopt_it(tmp_path):
    import sqlite3

    db = tmp_path / "app.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    refused = cli("run", DEMO, "--db", db, "--thread", "t")
    assert refused.exit_code == 1
    assert "holds another application's tables (users)" in refused.stderr
    assert "--adopt" in refused.stderr and "Traceback" not in refused.output
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]
    adopted = cli("run", DEMO, "--db", db, "--thread", "t", "--adopt")
    assert adopted.exit_code == 0, adopted.output
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
    conn.close()
    again = cli("run", DEMO, "--db", db, "--thread", "t2")  # a cortex database now
    assert again.exit_code == 0, again.output


def test_run_without_a_model_says_so_before_creating_the_database_or_a_thread(
    tmp_path, monkeypatch
):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "new.db"
    result = cli("run", "graphs/claim_review.py", "--db", db, "--thread", "t")
    assert result.exit_code == 1
    assert "need a chat model (planner, analyst-a, analyst-b, analyst-c, ...)" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "nothing was created" in result.stderr
    assert not db.exists() and list(tmp_path.iterdir()) == []
    assert cli("run", DEMO, "--db", db, "--thread", "other").exit_code == 0  # no model needed
    again = cli("run", "graphs/claim_review.py", "--db", db, "--thread", "t")
    assert again.exit_code == 1
    threads = json.loads(cli("inspect", db, "--json").stdout)
    assert [t["thread_id"] for t in threads] == ["other"]  # no failed thread left behind


def test_run_opens_scratch_memory_in_the_runs_database(tmp_path):
    from cortex_agents.scratch import open_scratch

    (tmp_path / "kinds.py").write_text(
        "def keep(ctx):\n"
        "    ctx.scratch.append('/seen', ctx.thread_id)\n"
        "    return {'files': [f.path for f in ctx.scratch.files()]}\n"
    )
    (tmp_path / "w.toml").write_text(
        'name = "notes"\n[kinds]\nkeeper = "kinds.py:keep"\n'
        '[[stages]]\nid = "keeper"\nkind = "keeper"\nscratch = "global"\n'
    )
    db = tmp_path / "run.db"
    for thread in ("t1", "t2"):
        result = cli("run", tmp_path / "w.toml", "--db", db, "--thread", thread)
        assert result.exit_code == 0, result.output
    with open_scratch(db) as scratch:
        assert scratch.bind("keeper", scope="global", thread_id=None).read("/seen") == "t1\nt2"


RECALLING_WIRE = """
from cortex_agents.memory import Topological
from cortex_agents.runtime import WireBuilder


def analyse(ctx):
    return {"claim_ref": ctx.stage_id, "finding": f"{ctx.stage_id}: {ctx.run_input['claim']}"}


def review(ctx):
    return {"ranking": [m.node_id for m in ctx.memory.recall(text="sampling problems")]}


wire = (
    WireBuilder("recalling")
    .kind("analyst", analyse)
    .kind("reviewer", review)
    .stage("analyst-a", "analyst")
    .stage("analyst-b", "analyst")
    .stage("reviewer", "reviewer", after=["analyst-a", "analyst-b"],
           memory=Topological(preset="reviewer"))
    .build()
)
"""


def _stored_vectors(db) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM store WHERE prefix LIKE 'cortex.embeddings.%'"
        ).fetchone()
    return count


def test_run_keeps_body_vectors_in_the_runs_store_and_embeds_a_body_once(tmp_path):
    """Issue 11: embeddings are cached by (scorer, body hash) in the store, across runs."""
    wire = tmp_path / "recalling.py"
    wire.write_text(RECALLING_WIRE)
    db = tmp_path / "run.db"
    first = cli("run", wire, "--db", db, "--thread", "t1", "--input", '{"claim": "selection bias"}')
    assert first.exit_code == 0, first.output
    stored = _stored_vectors(db)
    assert stored == 2  # the two analysts' bodies, embedded once each
    # another thread over the same bodies embeds nothing new
    again = cli("run", wire, "--db", db, "--thread", "t2", "--input", '{"claim": "selection bias"}')
    assert again.exit_code == 0, again.output
    assert _stored_vectors(db) == stored
    other = cli("run", wire, "--db", db, "--thread", "t3", "--input", '{"claim": "trial gains"}')
    assert other.exit_code == 0, other.output
    assert _stored_vectors(db) == stored + 2
