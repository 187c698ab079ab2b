"""Export, import (strict and forensic) and inspect, through the library and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.errors import InvalidArgument
from cortex_agents.memory._engine import query_vectorised
from cortex_agents.persistence import UnknownThread, export_document, import_document, open_saver
from cortex_agents.snapshotfile import dump_snapshot, load_snapshot, parse_snapshot
from tests.support.graphs import chain_graph

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
runner = CliRunner()


def cli(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def test_export_import_export_is_byte_identical(open_db):
    with open_db() as saver:
        chain_graph().compile(checkpointer=saver).invoke(
            {"goal": 6}, {"configurable": {"thread_id": "run"}}
        )
        first = dump_snapshot(export_document(saver, "run"))
        report = import_document(saver, "copy", parse_snapshot(first))
        assert (report.nodes, report.edges) == (6, 5)
        assert dump_snapshot(export_document(saver, "copy")) == first
        # the copy is a thread of its own: queries on both agree
        a = query_vectorised(export_document(saver, "run").to_memory_snapshot(), "stage-0005")
        b = query_vectorised(export_document(saver, "copy").to_memory_snapshot(), "stage-0005")
        assert [(m.node_id, m.score) for m in a] == [(m.node_id, m.score) for m in b]


def test_hand_written_file_round_trips_through_the_cli(durable_database, tmp_path):
    out = tmp_path / "out.json"
    assert cli("import", EXAMPLE, durable_database, "--thread", "t1").exit_code == 0
    result = cli("export", durable_database, "--thread", "t1", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == EXAMPLE.read_bytes()


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    base = json.loads(EXAMPLE.read_text())
    cases = {}
    dangling = json.loads(json.dumps(base))
    dangling["edges"].append({"source": "merge", "target": "ghost"})
    cases["dangling edge"] = dangling
    cycle = json.loads(json.dumps(base))
    cycle["edges"].append({"source": "rewriter", "target": "planner"})
    cases["cycle"] = cycle
    duplicate = json.loads(json.dumps(base))
    duplicate["nodes"].append(dict(duplicate["nodes"][0]))
    cases["duplicate id"] = duplicate
    paths = {}
    for name, data in cases.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.json"
        paths[name].write_text(json.dumps(data))
    return paths


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("dangling edge", "unknown node 'ghost'"),
        ("cycle", "closes a cycle"),
        ("duplicate id", "duplicate node id"),
    ],
)
def test_strict_import_rejects_and_writes_nothing(durable_database, tmp_path, case, message):
    assert cli("import", EXAMPLE, durable_database, "--thread", "existing").exit_code == 0
    with open_saver(durable_database) as saver:
        rows_before = saver.store.counts()
        checkpoints_before = len(list(saver.inner.list(None)))
    result = cli("import", _bad_files(tmp_path)[case], durable_database, "--thread", "new")
    assert result.exit_code == 1
    assert message in result.stderr
    with open_saver(durable_database) as saver:
        assert saver.store.counts() == rows_before
        assert len(list(saver.inner.list(None))) == checkpoints_before
        assert saver.substrate({"configurable": {"thread_id": "new"}}) is None


def test_import_refuses_an_existing_thread(open_db):
    with open_db() as saver:
        import_document(saver, "t", load_snapshot(EXAMPLE))
        with pytest.raises(InvalidArgument, match="already exists"):
            import_document(saver, "t", load_snapshot(EXAMPLE))


def test_export_of_an_unknown_thread(open_db):
    with open_db() as saver, pytest.raises(UnknownThread, match="no thread 'nope'"):
        export_document(saver, "nope")


def test_inspect_lists_threads_and_details(durable_database):
    cli("import", EXAMPLE, durable_database, "--thread", "b-run")
    cli("import", EXAMPLE, durable_database, "--thread", "a-run")
    listing = json.loads(cli("inspect", durable_database, "--json").stdout)
    assert [t["thread_id"] for t in listing] == ["a-run", "b-run"]
    assert listing[0] | {"thread_id": "x"} == {
        "thread_id": "x",
        "events": 26,
        "nodes": 7,
        "settled": 5,
        "failed": 0,
        "rewrites": 0,
        "last_event_at": "2026-01-01T00:08:00Z",
    }
    detail = json.loads(cli("inspect", durable_database, "--thread", "a-run", "--json").stdout)
    assert [n["id"] for n in detail["nodes"]][:2] == ["planner", "analyst-a"]
    assert {"source": "merge", "target": "reviewer"} in detail["edges"]
    table = cli("inspect", durable_database, "--thread", "a-run")
    assert table.exit_code == 0 and "reviewer" in table.stdout


def test_memory_query_reads_a_database_thread(durable_database):
    cli("import", EXAMPLE, durable_database, "--thread", "t1")
    from_db = cli(
        "memory", "query", durable_database, "--thread", "t1", "--origin", "reviewer", "--json"
    )
    from_file = cli("memory", "query", EXAMPLE, "--origin", "reviewer", "--json")
    assert from_db.exit_code == 0, from_db.output
    assert json.loads(from_db.stdout) == json.loads(from_file.stdout)


def test_missing_database_and_bad_url_are_clear_errors(tmp_path):
    missing = cli("inspect", tmp_path / "nope.db")
    assert missing.exit_code == 1 and "no database at" in missing.stderr
    assert not (tmp_path / "nope.db").exists()  # reading never creates a database
    unreachable = cli("inspect", "postgresql://u:secret@127.0.0.1:1/x")
    assert unreachable.exit_code == 1
    assert "cannot connect" in unreachable.stderr and "secret" not in unreachable.stderr


def _foreign_files(tmp_path):
    import sqlite3

    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    text = tmp_path / "notes.db"
    text.write_text("hello\n")
    return {"another app's SQLite": other, "an empty file": empty, "a text file": text}


READ_COMMANDS = [
    ("inspect", "{db}"),
    ("inspect", "{db}", "--thread", "t"),
    ("export", "{db}", "--thread", "t", "-o", "{out}"),
    ("graph", "{db}", "--thread", "t", "-o", "{out}"),
    ("memory", "query", "{db}", "--thread", "t", "--origin", "a"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_reading_commands_refuse_a_file_that_is_not_a_cortex_database_and_change_nothing(
    tmp_path, command
):
    for label, path in _foreign_files(tmp_path).items():
        before = path.read_bytes()
        out = tmp_path / "out.json"
        result = cli(*(part.format(db=path, out=out) for part in command))
        assert result.exit_code == 1, (label, result.output)
        assert "not a" in result.stderr and "nothing was changed" in result.stderr, label
        assert "Traceback" not in result.output
        assert path.read_bytes() == before, label  # not migrated, not switched to WAL
        assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "empty.db", "notes.db"]


def test_commands_that_create_a_database_fail_cleanly_on_impossible_paths(tmp_path):
    snapshot = tmp_path / "s.json"
    snapshot.write_text(EXAMPLE.read_text())
    (tmp_path / "adir").mkdir()
    (tmp_path / "notes.db").write_text("hello\n")
    for db, message in [
        (tmp_path / "nodir" / "x.db", "does not exist; create it first"),
        (tmp_path / "adir", "it is a directory"),
        (tmp_path / "notes.db", "is not a SQLite database"),
    ]:
        for args in (
            ("import", snapshot, db, "--thread", "t"),
            ("run", "graphs/fanout_demo.py", "--db", db, "--thread", "t"),
            ("demo", "--db", db),
        ):
            result = cli(*args)
            assert result.exit_code == 1, (args, result.output)
            assert message in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "nodir").exists()
    assert (tmp_path / "notes.db").read_text() == "hello\n"


def test_export_to_an_impossible_path_and_an_unknown_checkpoint_fail_cleanly(tmp_path):
    db = tmp_path / "c.db"
    assert cli("import", EXAMPLE, db, "--thread", "t").exit_code == 0
    for target in (tmp_path / "nodir" / "o.json", tmp_path):
        result = cli("export", db, "--thread", "t", "-o", target)
        assert result.exit_code == 1 and "cannot write" in result.stderr
    bogus = cli("export", db, "--thread", "t", "--checkpoint", "bogus", "-o", tmp_path / "o.json")
    assert bogus.exit_code == 1
    assert "no checkpoint 'bogus' of thread 't'" in bogus.stderr
    as_file = cli("memory", "query", db, "--origin", "reviewer")
    assert as_file.exit_code == 2 and "--thread" in as_file.stderr
    assert "SQLite database" in as_file.stderr
    imported = cli("import", db, tmp_path / "other.db", "--thread", "x")
    assert imported.exit_code == 1
    assert "is a SQLite database, not a snapshot file" in imported.stderr
