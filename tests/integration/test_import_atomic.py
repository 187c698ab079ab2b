"""Import is one transaction on every backend (issue 14, D7): a failure after the substrate
rows were written leaves no orphan branch or event rows, however often it is retried. So is
each commit of a lock holder (events, checkpoint and fence check; pipelined on Postgres)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex_agents.errors import StorageError
from cortex_agents.persistence import export_document, import_document, is_postgres_url, open_saver
from cortex_agents.snapshotfile import dump_snapshot, load_snapshot
from tests.support.fencing import table_rows
from tests.support.graphs import chain_graph, expected_log, stage_events

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


def committed(database: str) -> dict[str, int]:
    """Rows of the checkpoint and substrate tables (pending writes are a commit of their own)."""
    return {k: v for k, v in table_rows(database).items() if "writes" not in k}


def test_a_refused_commit_of_a_lock_holder_writes_nothing_and_the_next_one_lands(
    durable_database,
):
    config = {"configurable": {"thread_id": "t"}}
    with open_saver(durable_database) as saver:
        app = chain_graph().compile(checkpointer=saver)
        with saver.lock("t"):
            app.invoke({"goal": 2}, config)
            rows = committed(durable_database)
            refuse_checkpoints(saver, durable_database)
            step = {"substrate": stage_events(2), "steps": 3}  # event, node and edge rows first
            for _ in range(2):  # a refused commit leaves no transaction open behind it
                with pytest.raises(StorageError) as caught:
                    app.update_state(config, step)
                assert "refused by the test" in str(caught.value)
                assert caught.value.__cause__ is not None  # the driver's error, not masked
                assert committed(durable_database) == rows
            allow_checkpoints(saver, durable_database)
            app.update_state(config, step)  # the saver commits again, nothing stale cached
        assert app.get_state(config).values["substrate"] == expected_log(3)
    with open_saver(durable_database) as fresh:
        assert fresh.substrate(config) == expected_log(3)
