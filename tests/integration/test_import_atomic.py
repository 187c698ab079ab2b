"""Import is one transaction on every backend (issue 14, D7): a failure after the substrate
rows were written leaves no orphan branch or event rows, however often it is retried."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex_agents.errors import StorageError
from cortex_agents.persistence import is_postgres_url, open_saver
from cortex_agents.persistence.transfer import export_document, import_document
from cortex_agents.snapshot_file import dump_snapshot, load_snapshot

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"


def refuse_checkpoints(saver, database: str) -> None:
    """A trigger that makes the checkpoint insert fail, after the events went in."""
    conn = saver.store.conn
    if is_postgres_url(database):
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
        return
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints "
        "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    conn.commit()


def allow_checkpoints(saver, database: str) -> None:
    saver.store.conn.execute(
        "DROP TRIGGER refuse" + (" ON checkpoints" if is_postgres_url(database) else "")
    )
    if not is_postgres_url(database):
        saver.store.conn.commit()


def test_a_failed_import_writes_nothing_and_a_retry_succeeds(durable_database):
    document = load_snapshot(EXAMPLE)
    with open_saver(durable_database) as saver:
        import_document(saver, "before", document)
        rows = saver.store.counts()
        refuse_checkpoints(saver, durable_database)
        for _ in range(3):  # each retry used to leave more orphan rows behind
            with pytest.raises(StorageError) as caught:
                import_document(saver, "new", document)
            assert "refused by the test" in str(caught.value)
            assert caught.value.__cause__ is not None  # the driver's error, not masked
            assert saver.store.counts() == rows
            assert saver.store.threads() == ["before"]
            assert saver.get_tuple({"configurable": {"thread_id": "new"}}) is None
        allow_checkpoints(saver, durable_database)
        import_document(saver, "new", document)  # no stale cache of the rolled-back branch
        assert dump_snapshot(export_document(saver, "new")) == EXAMPLE.read_text()
        assert dump_snapshot(export_document(saver, "before")) == EXAMPLE.read_text()
    with open_saver(durable_database) as saver:  # and what a fresh reader sees agrees
        assert dump_snapshot(export_document(saver, "new")) == EXAMPLE.read_text()
        assert saver.store.counts()["events"] == 2 * rows["events"]
