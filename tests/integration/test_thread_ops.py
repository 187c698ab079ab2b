"""CortexSaver's optional capabilities — copy_thread, prune, delete_for_runs — keep the substrate
right, on every backend, and are all-or-nothing on the SQL ones."""

from __future__ import annotations

import pytest

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.persistence import is_postgres_url
from tests.support.graphs import chain_graph, expected_log


def config(thread: str, **extra) -> dict:
    return {"configurable": {"thread_id": thread}, **extra}


def run(saver, thread: str, goal: int, run_id: str | None = None) -> None:
    app = chain_graph().compile(checkpointer=saver)
    extra = {"metadata": {"run_id": run_id}} if run_id else {}
    app.invoke({"goal": goal}, config(thread, **extra))


def checkpoints(saver, thread: str) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list(config(thread))]


def test_copy_thread_copies_the_substrate_and_the_copy_lives_on_its_own(open_db):
    with open_db() as saver:
        run(saver, "src", 4)
        saver.copy_thread("src", "dst")
        assert checkpoints(saver, "dst") == checkpoints(saver, "src")
        assert saver.substrate(config("dst")) == expected_log(4)
        for src, dst in zip(saver.list(config("src")), saver.list(config("dst")), strict=True):
            source, copy = (t.checkpoint["channel_values"].get("substrate") for t in (src, dst))
            assert copy == source
        run(saver, "dst", 6)  # the copy resumes, writing only its own rows
        assert saver.substrate(config("dst")) == expected_log(6)
        assert saver.substrate(config("src")) == expected_log(4)
        with pytest.raises(InvalidArgument, match="already has checkpoints"):
            saver.copy_thread("src", "dst")


def test_prune_keeps_the_latest_checkpoint_with_its_whole_substrate(open_db):
    with open_db() as saver:
        run(saver, "t", 5)
        run(saver, "other", 2)
        other = checkpoints(saver, "other")
        latest = checkpoints(saver, "t")[0]
        saver.prune(["t"])
        assert checkpoints(saver, "t") == [latest]
        assert saver.substrate(config("t")) == expected_log(5)
        assert checkpoints(saver, "other") == other
        run(saver, "t", 7)  # a pruned thread resumes from its latest checkpoint
        assert saver.substrate(config("t")) == expected_log(7)
        saver.prune(["t"], strategy="delete")
        assert checkpoints(saver, "t") == [] and saver.substrate(config("t")) is None
        assert "t" not in saver.store.threads()


def test_delete_for_runs_removes_that_runs_checkpoints_only(open_db):
    with open_db() as saver:
        run(saver, "t", 2, run_id="first")
        first = checkpoints(saver, "t")
        run(saver, "t", 4, run_id="second")
        saver.delete_for_runs(["second"])
        assert checkpoints(saver, "t") == first
        assert saver.substrate(config("t")) == expected_log(2)
        saver.delete_for_runs([])
        saver.delete_for_runs(["never-ran"])
        assert checkpoints(saver, "t") == first


def test_a_failing_prune_leaves_the_thread_as_it_was(durable_database):
    from cortex_agents.persistence import open_saver

    with open_saver(durable_database) as saver:
        run(saver, "t", 4)
        before = checkpoints(saver, "t")
        rows = saver.store.counts()
        conn = saver.store.conn
        if is_postgres_url(durable_database):
            conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql"
            )
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        else:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
            conn.commit()
        with pytest.raises(StorageError, match="refused by the test"):
            saver.prune(["t"])
        assert checkpoints(saver, "t") == before  # deleted and re-put, or neither
        assert saver.store.counts() == rows
        assert saver.substrate(config("t")) == expected_log(4)
