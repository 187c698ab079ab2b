"""A damaged SQLite file and failing transactions (issue 14, D8): clean errors, no tracebacks,
no writes into a file that fails its integrity check, and never a masked cause."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortex_agents.cli import app
from cortex_agents.errors import StorageError
from cortex_agents.persistence import import_document, open_saver
from cortex_agents.snapshotfile import load_snapshot

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
DEMO = "graphs/fanout_demo.py"
runner = CliRunner()


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    # CliRunner catches what escapes the command: anything but an exit is a raw traceback
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def database(tmp_path: Path) -> Path:
    db = tmp_path / "c.db"
    assert cli("import", EXAMPLE, db, "--thread", "t").exit_code == 0
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file
    conn.close()
    return db


def root_page(db: Path, table: str) -> tuple[int, int]:
    conn = sqlite3.connect(db)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    return page[0], size


def garbage_page(db: Path, table: str) -> None:
    page, size = root_page(db, table)
    data = bytearray(db.read_bytes())
    noise = random.Random(page).randbytes(size)
    data[(page - 1) * size : page * size] = noise
    db.write_bytes(bytes(data))


def flip_bytes(db: Path, table: str) -> None:
    page, size = root_page(db, table)
    data = bytearray(db.read_bytes())
    for offset in range(0, 64, 3):  # the page header and its first cell pointers
        data[(page - 1) * size + offset] ^= 0xFF
    db.write_bytes(bytes(data))


CORRUPTIONS = {
    "garbage events page": lambda db: garbage_page(db, "cortex_events"),
    "garbage checkpoints page": lambda db: garbage_page(db, "checkpoints"),
    "flipped bytes in the branches page": lambda db: flip_bytes(db, "cortex_branches"),
    "truncated file": lambda db: db.write_bytes(db.read_bytes()[: len(db.read_bytes()) // 2]),
}
READS = [
    ("inspect", "{db}"),
    ("inspect", "{db}", "--thread", "t"),
    ("export", "{db}", "--thread", "t", "-o", "{out}"),
    ("graph", "{db}", "--thread", "t", "-o", "{out}"),
    ("memory", "query", "{db}", "--thread", "t", "--origin", "reviewer"),
    ("validate", "{db}", "--thread", "t"),
]
WRITES = [
    ("run", DEMO, "--db", "{db}", "--thread", "new"),
    ("import", str(EXAMPLE), "{db}", "--thread", "new"),
]


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_file_gives_clean_errors_and_is_never_written(tmp_path, corruption):
    db = database(tmp_path)
    CORRUPTIONS[corruption](db)
    damaged = db.read_bytes()
    out = tmp_path / "out.json"
    for command in READS:
        result = cli(*(part.format(db=db, out=out) for part in command))
        assert result.exit_code in (0, 1), (command, result.output)
    for command in WRITES:
        result = cli(*(part.format(db=db) for part in command))
        assert result.exit_code == 1, (command, result.output)
        assert "fails SQLite's integrity check" in result.stderr, (command, result.stderr)
        assert "--skip-integrity-check" in result.stderr
        assert db.read_bytes() == damaged, command  # refused before anything was written
    forced = cli(*(p.format(db=db) for p in WRITES[1]), "--skip-integrity-check")
    assert forced.exit_code in (0, 1)  # it may work or fail, but cleanly


def test_reading_a_damaged_events_table_names_the_corruption(tmp_path):
    db = database(tmp_path)
    garbage_page(db, "cortex_events")
    result = cli("inspect", db, "--thread", "t")
    assert result.exit_code == 1
    assert "(corrupt)" in result.stderr or "malformed" in result.stderr, result.stderr


def test_a_rollback_sqlite_already_did_does_not_hide_the_cause(tmp_path):
    """SQLite rolls a transaction back by itself on a full disk; the explicit ROLLBACK then fails.

    A trigger doing RAISE(ROLLBACK) reproduces exactly that state.
    """
    db = tmp_path / "full.db"
    document = load_snapshot(EXAMPLE)
    with open_saver(db) as saver:
        saver.store.conn.execute(
            "CREATE TRIGGER full BEFORE INSERT ON cortex_events "
            "BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full (simulated)'); END"
        )
        saver.store.conn.commit()
        with pytest.raises(StorageError) as caught:
            import_document(saver, "t", document)
        assert "disk is full (simulated)" in str(caught.value)
        assert isinstance(caught.value.__cause__, sqlite3.Error)
        assert not saver.store.conn.in_transaction
        saver.store.conn.execute("DROP TRIGGER full")
        saver.store.conn.commit()
        import_document(saver, "t", document)  # the connection is usable again
        assert saver.store.threads() == ["t"]


def test_another_users_open_transaction_on_the_shared_connection_is_never_committed(tmp_path):
    db = tmp_path / "shared.db"
    with open_saver(db) as saver:
        conn = saver.store.conn
        conn.execute("CREATE TABLE mine (x INTEGER)")
        conn.commit()
        conn.execute("INSERT INTO mine VALUES (1)")  # left open, on purpose
        with pytest.raises(StorageError) as caught:
            import_document(saver, "t", load_snapshot(EXAMPLE))
        assert caught.value.code == "open_transaction"
        conn.rollback()  # the other user changes their mind: their row must not be there
        assert conn.execute("SELECT COUNT(*) FROM mine").fetchone()[0] == 0
        assert saver.store.counts()["events"] == 0
        import_document(saver, "t", load_snapshot(EXAMPLE))
        assert saver.store.threads() == ["t"]


def test_driver_errors_outside_integrity_are_mapped_with_their_cause(tmp_path):
    db = tmp_path / "ro.db"
    with open_saver(db) as saver:
        import_document(saver, "t", load_snapshot(EXAMPLE))
    with open_saver(db) as saver:
        saver.store.conn.execute("PRAGMA query_only = ON")  # every write now fails
        with pytest.raises(StorageError) as caught:
            import_document(saver, "t2", load_snapshot(EXAMPLE))
        assert caught.value.code == "read_only"
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)


def test_a_damaged_event_row_is_reported_as_corrupt_by_every_reader(tmp_path):
    db = database(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE cortex_events SET body = '{' WHERE seq = 3")
    conn.commit()
    conn.close()
    for command in (("inspect", db), ("export", db, "--thread", "t", "-o", tmp_path / "o.json")):
        result = cli(*command)
        assert result.exit_code == 1
        assert "a stored event row is not JSON" in result.stderr, result.stderr
