"""Seed 004's integrity story (issue 15, item 6): forensic import loads every row, keeps the
ones that break integrity quarantined in the thread and reports them; ``validate DB --thread``
gives a stored thread the same located report as a file; strict import stays all-or-nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.persistence import export_document, open_saver, quarantined_rows, validate_thread
from cortex_agents.snapshotfile import load_snapshot

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
runner = CliRunner()


def cli(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def messy(tmp_path: Path) -> Path:
    """The example with a dangling edge, a cycle, an invalid node and an orphan rewrite."""
    data = json.loads(EXAMPLE.read_text())
    data["edges"] += [
        {"source": "merge", "target": "ghost"},  # edges[8]: dangling
        {"source": "rewriter", "target": "planner"},  # edges[9]: closes a cycle
    ]
    data["nodes"].append(  # nodes[7]: invalid status
        {"id": "broken", "kind": "x", "status": "done", "captured_at": "2026-01-01T00:00:00Z"}
    )
    data["rewrites"] = [  # rewrites[0]: an orphan (its proposer is no node)
        {
            "rewrite_id": None,
            "proposer": "nobody",
            "proposal": {"op": "x"},
            "decision": "rejected",
            "code": "invalid_rewrite",
        }
    ]
    path = tmp_path / "messy.json"
    path.write_text(json.dumps(data))
    return path


EXPECTED_ROWS = [
    (
        "nodes[7]",
        "invalid",
        '{"id":"broken","kind":"x","status":"done","captured_at":"2026-01-01T00:00:00Z"}',
    ),
    ("edges[8]", "dangling", '{"source":"merge","target":"ghost"}'),
    ("edges[9]", "cycle", '{"source":"rewriter","target":"planner"}'),
]


def test_forensic_import_loads_marks_and_reports_every_row_that_breaks_integrity(
    durable_database, tmp_path
):
    result = cli("import", messy(tmp_path), durable_database, "--thread", "salvaged", "--forensic")
    assert result.exit_code == 0, result.output
    assert "imported 'salvaged': 7 nodes, 8 edges" in result.stdout
    assert "quarantined in the thread, not in its graph (4 rows, 4 problems)" in result.stderr
    for text in (
        "edges[8].target: unknown node 'ghost' [dangling]",
        "edges[9]: closes a cycle rewriter -> planner -> ",
        "nodes[7].status: Input should be",
        "rewrites[0].proposer: unknown node 'nobody' [orphan]",
    ):
        assert text in result.stderr
    with open_saver(durable_database) as saver:
        rows, orphans = quarantined_rows(saver, "salvaged")
        assert [(r.location, r.category, r.row) for r in rows][:3] == EXPECTED_ROWS
        assert rows[3].location == "rewrites[0]" and rows[3].category == "orphan"
        assert orphans == ()
        # the graph memory sees holds only the rows that passed
        document = export_document(saver, "salvaged")
        assert {n.id for n in document.nodes} == {n.id for n in load_snapshot(EXAMPLE).nodes}
        assert len(document.edges) == 8 and document.rewrites == ()


def test_validate_a_stored_thread_gives_the_same_located_report(durable_database, tmp_path):
    assert cli("import", EXAMPLE, durable_database, "--thread", "clean").exit_code == 0
    assert (
        cli("import", messy(tmp_path), durable_database, "--thread", "t", "--forensic").exit_code
        == 0
    )
    clean = cli("validate", durable_database, "--thread", "clean")
    assert clean.exit_code == 0, clean.output
    assert "valid: thread 'clean'" in clean.stdout and "(7 nodes, 8 edges)" in clean.stdout
    report = cli("validate", durable_database, "--thread", "t")
    assert report.exit_code == 1
    lines = [line.strip() for line in report.stderr.splitlines()]
    assert lines[0] == f"invalid thread 't' in {durable_database} (4 problems):"
    assert lines[2] == "edges[8].target: quarantined (dangling): unknown node 'ghost'"
    assert lines[3].startswith("edges[9]: quarantined (cycle): closes a cycle rewriter -> planner")
    as_json = json.loads(cli("validate", durable_database, "--thread", "t", "--json").stdout)
    assert as_json["valid"] is False
    assert [q["location"] for q in as_json["quarantined"]] == [
        "nodes[7]",
        "edges[8]",
        "edges[9]",
        "rewrites[0]",
    ]
    missing = cli("validate", durable_database, "--thread", "nope")
    assert missing.exit_code == 1 and "no thread 'nope'" in missing.stderr
    # without --thread: every thread, each with its report; invalid if one is
    every = cli("validate", durable_database)
    assert every.exit_code == 1
    assert "valid: thread 'clean'" in every.stdout
    assert f"invalid thread 't' in {durable_database} (4 problems):" in every.stderr
    reports = json.loads(cli("validate", durable_database, "--json").stdout)
    assert [(r["thread_id"], r["valid"]) for r in reports] == [("clean", True), ("t", False)]


def test_validate_a_database_without_threads_or_with_valid_ones_exits_0(tmp_path):
    db = tmp_path / "v.db"
    assert cli("import", EXAMPLE, db, "--thread", "a").exit_code == 0
    assert cli("import", EXAMPLE, db, "--thread", "b").exit_code == 0
    both = cli("validate", db)
    assert both.exit_code == 0, both.output
    assert both.stdout.count("valid: thread") == 2
    with open_saver(db) as saver:
        saver.delete_thread("a")
        saver.delete_thread("b")
    empty = cli("validate", db)
    assert empty.exit_code == 0 and f"valid: no threads in {db}" in empty.stdout
    assert json.loads(cli("validate", db, "--json").stdout) == []


def test_an_orphan_node_is_reported_by_import_and_by_validate(tmp_path):
    data = json.loads(EXAMPLE.read_text())
    rewriter = next(i for i, n in enumerate(data["nodes"]) if n["id"] == "rewriter")
    data["edges"] = [e for e in data["edges"] if "rewriter" not in (e["source"], e["target"])]
    data["edges"].append({"source": "rewriter", "target": "ghost"})  # its one edge dangles
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(data))
    db = tmp_path / "o.db"
    imported = cli("import", path, db, "--thread", "t", "--forensic")
    assert imported.exit_code == 0, imported.output
    expected = f"nodes[{rewriter}]: orphan: every edge of 'rewriter' was left out"
    assert expected in imported.stderr
    with open_saver(db) as saver:
        report = validate_thread(saver, "t")
    assert not report.valid
    assert str(report.orphans[0]).startswith(expected)
    assert cli("validate", db, "--thread", "t").stderr.count("orphan: every edge") == 1


def test_a_damaged_substrate_is_a_located_problem_not_a_traceback(tmp_path):
    db = tmp_path / "d.db"
    assert cli("import", EXAMPLE, db, "--thread", "t").exit_code == 0
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("DELETE FROM cortex_events WHERE seq = 3")  # a hole in the log
    conn.commit()
    conn.close()
    result = cli("validate", db, "--thread", "t")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (
        "database: foreign key check: a row of cortex_nodes references a missing" in result.stderr
    )
    assert "substrate: cannot be read" in result.stderr


def test_strict_import_of_the_messy_file_writes_nothing_and_creates_no_file(tmp_path):
    db = tmp_path / "new.db"
    result = cli("import", messy(tmp_path), db, "--thread", "t")
    assert result.exit_code == 1
    assert "invalid snapshot (4 problems)" in result.stderr
    assert not db.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["messy.json"]
