"""What one stage costs the database: statements, and reads the commit waits for.

A stage of a chain is alone in its superstep, so it commits once: its pending
writes go in the transaction of the checkpoint that follows it, with its
substrate events (``persistence/solo.py``; a stage sharing its superstep
commits its writes alone first). These tests count, per stage of a run, the
commits, the statements the saver sends and the results it fetches in the
middle of a commit (on Postgres each such fetch is a round trip the worker
waits for; a commit's own end is not a fetch). The counts are the
marginal ones: a 12-stage chain minus a 4-stage chain, over 8, so a run's own
fixed work (the lock, the writer claim, the first checkpoints) cancels out.
They are budgets that a change adding a statement or a read to every stage
breaks; a change removing one only makes them loose.

The cached branch head that saves a read is only trusted under the writer
epoch it was seen with: the last test takes the thread away between two runs
of one saver and leaves events beyond its checkpoint, as a writer that
crashed before its checkpoint would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest

from cortex_agents.errors import StorageError, WriterFenced
from cortex_agents.persistence import Cursor, open_saver, validate_thread
from cortex_agents.persistence._fencing import Fence
from cortex_agents.runtime import Runtime, TickingClock, WireBuilder
from cortex_agents.substrate import event_from_dict
from tests.support.fencing import table_rows
from tests.support.graphs import chain_graph, expected_log, stage_events
from tests.support.helpers import T0

CONFIG = {"configurable": {"thread_id": "t"}}

# Per stage of a chain, in steady state (see the module docstring).
STATEMENT_BUDGET = {"postgres": 7, "sqlite": 13}
"""Statements per stage: a row of an ``executemany`` counts as one (it is one on the wire)."""
COMMIT_BUDGET = 1.0
"""Commits per stage of a chain: its writes and its checkpoint in one transaction."""


def chain(n: int) -> Any:
    builder = WireBuilder(f"chain{n}").kind("step", lambda ctx: {"i": ctx.stage_id})
    for i in range(n):
        builder.stage(f"s{i:02d}", "step", after=[f"s{i - 1:02d}"] if i else [])
    return builder.build()


class Counts:
    """Statements sent and mid-transaction fetches, while counting is on."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.fetches = 0
        self.commits = 0.0  # per stage, set by ``per_stage``
        self.on = False

    def statement(self, sql: Any, rows: int = 1) -> None:
        if self.on:
            self.statements += [" ".join(str(sql).split())] * rows


@contextmanager
def counting_postgres(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    """Count what every psycopg cursor executes and fetches (a fetch is a wait for the server)."""
    import psycopg

    counts = Counts()
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def counted_execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        counts.statement(query)
        return execute(self, query, params, **kw)

    def counted_executemany(self: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
        params_seq = list(params_seq)
        counts.statement(query, len(params_seq))
        return executemany(self, query, params_seq, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
    monkeypatch.setattr(psycopg.Cursor, "executemany", counted_executemany)
    for name in ("fetchone", "fetchall", "fetchmany"):
        original = getattr(psycopg.Cursor, name)

        def fetch(self: Any, *args: Any, _original: Callable[..., Any] = original) -> Any:
            if counts.on and self.connection._pipeline is not None:
                counts.fetches += 1
            return _original(self, *args)

        monkeypatch.setattr(psycopg.Cursor, name, fetch)
    yield counts


def per_stage(
    db: str, counts: Counts, trace: Callable[[Any], None] | None = None
) -> tuple[float, float]:
    """Statements and fetches per stage: (12-stage run - 4-stage run) / 8, each wire warmed first.

    ``counts.commits`` is set to the commits per stage, counted the same way.
    """
    with open_saver(db) as saver:
        if trace is not None:
            trace(saver)
        sent, fetched, committed = {}, {}, {}
        for n in (4, 12):
            runtime = Runtime(chain(n), saver, clock=TickingClock(T0))
            runtime.run(f"warm-{n}")
            before, fetches = len(counts.statements), counts.fetches
            counts.on = True
            result = runtime.run(f"run-{n}")
            counts.on = False
            assert result.complete and len(result.state.nodes) == n
            sent[n], fetched[n] = len(counts.statements) - before, counts.fetches - fetches
            committed[n] = counts.statements[before:].count("COMMIT")
    counts.commits = (committed[12] - committed[4]) / 8
    return (sent[12] - sent[4]) / 8, (fetched[12] - fetched[4]) / 8


@pytest.mark.postgres
def test_a_postgres_stage_sends_its_budget_of_statements_and_waits_only_at_commits(
    postgres_url, monkeypatch
):
    with counting_postgres(monkeypatch) as counts:
        statements, fetches = per_stage(postgres_url, counts)
    assert statements <= STATEMENT_BUDGET["postgres"], statements
    assert counts.commits <= COMMIT_BUDGET, counts.commits
    # the fence is checked, and the branch head known, without a read: a stage's commits
    # fetch nothing before their end (a run fetches its new branch's key, once)
    assert fetches == 0, fetches
    assert counts.fetches > 0  # the counting sees fetches where there are some
    assert not any("MAX(seq)" in s for s in counts.statements)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "writes",
    [
        [("substrate", [{"a": 1}]), ("scanned", 3), ("branch:to:x", None)],  # a stage's three
        [("__error__", "first"), ("__error__", "second")],  # one key twice: row by row, as before
        [(f"c{i}", i) for i in range(1100)],  # more rows than one statement takes
    ],
    ids=["stage", "upsert", "many"],
)
def test_a_commits_pending_writes_land_as_langgraphs_own_rows_in_one_statement(
    postgres_url, monkeypatch, writes
):
    # the rows LangGraph's own saver writes, byte for byte, from one INSERT per 512 rows
    # (its ``executemany`` sends one per row); an upsert keeps going row by row
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    def config(thread: str) -> Any:
        return {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": "c1"}}

    with open_saver(postgres_url) as saver, counting_postgres(monkeypatch) as counts:
        counts.on = True
        with saver.store.atomic(saver.inner.serde, doing="writes", pipelined=True) as joined:
            joined.put_writes(config("joined"), writes, "task", "path")
        counts.on = False
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            PostgresSaver(conn).put_writes(config("plain"), writes, "task", "path")
            rows = {
                thread: conn.execute(
                    "SELECT checkpoint_id, task_id, task_path, idx, channel, type, blob "
                    "FROM checkpoint_writes WHERE thread_id = %s ORDER BY idx",
                    (thread,),
                ).fetchall()
                for thread in ("joined", "plain")
            }
    assert rows["joined"] == rows["plain"]
    assert len(rows["plain"]) == len(
        {k for k, _ in writes} if writes[0][0] == "__error__" else writes
    )
    inserts = [s for s in counts.statements if s.startswith("INSERT INTO checkpoint_writes")]
    upsert = "DO UPDATE" in inserts[0]
    assert len(inserts) == (len(writes) if upsert else -(-len(writes) // 512))


@pytest.mark.postgres
def test_a_lock_holders_commits_land_as_langgraphs_own_rows_with_the_fence_in_their_inserts(
    postgres_url, monkeypatch
):
    # A fenced commit's check joins its first INSERT, and a checkpoint's blobs its row:
    # the rows are those LangGraph's own saver writes, and no check goes alone.
    import psycopg
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver

    checkpoint = {**empty_checkpoint(), "channel_values": {"a": [1, {"b": 2}], "n": 3, "s": "x"}}
    versions = {"a": "00001.0", "n": "00001.0", "s": "00001.0"}
    writes = [("a", [4]), ("n", 5), ("s", None)]

    def commit(saver: Any, thread: str) -> None:
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        stored = saver.put(config, checkpoint, {"step": 1, "source": "loop"}, versions)
        saver.put_writes(stored, writes, "task", "path")

    def rows(conn: Any, thread: str) -> dict[str, list[Any]]:
        queries = {
            "checkpoints": "SELECT checkpoint_id, parent_checkpoint_id, checkpoint, metadata "
            "FROM checkpoints WHERE thread_id = %s",
            "blobs": "SELECT channel, version, type, blob FROM checkpoint_blobs "
            "WHERE thread_id = %s ORDER BY channel",
            "writes": "SELECT checkpoint_id, task_id, task_path, idx, channel, type, blob "
            "FROM checkpoint_writes WHERE thread_id = %s ORDER BY idx",
        }
        return {name: conn.execute(sql, (thread,)).fetchall() for name, sql in queries.items()}

    with open_saver(postgres_url) as saver, counting_postgres(monkeypatch) as counts:
        with saver.lock("joined"):
            counts.on = True
            commit(saver, "joined")
            counts.on = False
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            commit(PostgresSaver(conn), "plain")
            joined, plain = rows(conn, "joined"), rows(conn, "plain")
    assert joined == plain and len(plain["blobs"]) == 1 and len(plain["writes"]) == 3
    sent = [s for s in counts.statements if s not in ("BEGIN", "COMMIT")]
    # no substrate here: the check takes the blobs, the checkpoint row goes alone (with one,
    # the events take the check and the blobs join the row: see the statement budget)
    assert [
        s.split(" (")[0] if s.startswith("INSERT") else s.split("written AS (")[1][:28]
        for s in sent
    ] == [
        "INSERT INTO checkpoint_blobs",
        "INSERT INTO checkpoints",
        "INSERT INTO checkpoint_write",
    ], sent


_NOTHING = "VALUES (%s, %s) ON CONFLICT DO NOTHING"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("call", "statement", "rows"),
    [
        ("executemany", _NOTHING, [("1", "2"), ["3", "4"]]),  # joined: the same rows
        ("executemany", _NOTHING, [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]),
        ("executemany", _NOTHING, [("1", "2", "3"), ("4",)]),  # ragged
        ("executemany", _NOTHING, ["ab", "cd"]),  # a string is no row
        ("execute", _NOTHING, "ab"),  # nor are a statement's parameters
        ("executemany", "SELECT %s, x FROM (VALUES (%s)) AS v(x)", [("k", "1"), ("k", "2")]),
    ],
    ids=[
        "rows",
        "dict-rows",
        "ragged-rows",
        "string-rows",
        "string-params",
        "placeholder-outside-values",
    ],
)
@pytest.mark.parametrize("fenced", [False, True], ids=["unfenced", "fenced"])
def test_a_joined_cursor_writes_or_refuses_what_langgraphs_own_cursor_does(
    postgres_url, call, statement, rows, fenced
):
    # The joined saver's cursor sends a batch as one multi-row INSERT only when that
    # is the same rows: a batch psycopg refuses row by row is refused (nothing
    # written), and one it takes is written as it would be.
    import psycopg

    sql = f"INSERT INTO joined_probe (a, b) {statement}"
    with open_saver(postgres_url) as saver:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE joined_probe (a text, b text)")
            try:
                with conn.cursor() as cur:
                    getattr(cur, call)(sql, rows)
                expected: Any = sorted(conn.execute("SELECT a, b FROM joined_probe").fetchall())
            except (TypeError, psycopg.Error) as exc:
                expected = type(exc)
            conn.execute("TRUNCATE joined_probe")
        # fenced: the block's fence check, not sent yet, joins the first statement
        fence = Fence("probe", saver.store.claim_writer("probe"), cast(Any, None))
        try:
            with (
                saver.store.atomic(
                    saver.inner.serde,
                    fence=fence if fenced else None,
                    doing="probe",
                    pipelined=fenced,
                ) as joined,
                cast(Any, joined)._cursor() as cur,
            ):
                getattr(cur, call)(sql, rows)
            got: Any = None
        except (TypeError, psycopg.Error, StorageError) as exc:
            got = type(exc.__cause__ if isinstance(exc, StorageError) else exc)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            written = sorted(conn.execute("SELECT a, b FROM joined_probe").fetchall())
    if isinstance(expected, type):
        assert (got, written) == (expected, [])
    else:
        assert (got, written) == (None, expected)


@pytest.mark.postgres
def test_a_joined_saver_lists_a_threads_checkpoints_as_langgraphs_own_does(postgres_url):
    # LangGraph's list() reads the pending sends of a checkpoint with a parent by
    # iterating its cursor (``for row in cur``): the joined saver's cursor iterates too
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    with open_saver(postgres_url) as saver:
        first = empty_checkpoint()
        config = {"configurable": {"thread_id": "listed", "checkpoint_ns": ""}}
        stored = saver.inner.put(config, first, {"step": 0}, {})
        saver.inner.put(stored, create_checkpoint(first, None, 1), {"step": 1}, {})
        wanted = {"configurable": {"thread_id": "listed"}}
        plain = [t.config["configurable"]["checkpoint_id"] for t in saver.inner.list(wanted)]
        with saver.store.atomic(saver.inner.serde, doing="list") as joined:
            listed = [t.config["configurable"]["checkpoint_id"] for t in joined.list(wanted)]
    assert len(plain) == 2 and listed == plain


def test_a_sqlite_stage_sends_its_budget_of_statements(tmp_path):
    counts = Counts()

    def trace(saver: Any) -> None:
        saver.store.conn.set_trace_callback(counts.statement)

    statements, _ = per_stage(str(tmp_path / "run.db"), counts, trace)
    assert statements <= STATEMENT_BUDGET["sqlite"], statements
    assert counts.commits <= COMMIT_BUDGET, counts.commits
    assert not any("MAX(seq)" in s for s in counts.statements)


def test_a_writer_taking_the_thread_again_sees_what_another_appended_meanwhile(
    durable_database,
):
    db = durable_database
    with open_saver(db) as a, open_saver(db) as b:
        app = chain_graph().compile(checkpointer=a)
        with a.lock("t"):
            app.invoke({"goal": 2}, CONFIG)  # a knows the branch head, under epoch 1
        with b.lock("t"):  # epoch 2: events beyond the checkpoint, never checkpointed
            stored = b.inner.get_tuple(CONFIG).checkpoint["channel_values"]["substrate"]
            cursor = Cursor.decode(stored)
            lost = [event_from_dict(e) for e in stage_events(2, "lost")]
            assert b.store.append("t", "", cursor, lost).seq == cursor.seq + len(lost)
        with a.lock("t"):  # epoch 3: a's head of epoch 1 no longer holds
            app.invoke({"goal": 3}, CONFIG)
        assert a.substrate(CONFIG) == expected_log(3)
        assert validate_thread(a, "t").valid
    with open_saver(db) as fresh:  # read back from rows alone
        assert fresh.substrate(CONFIG) == expected_log(3)
        assert fresh.store.counts()["branches"] == 2  # the first, holding the lost events; a fork


def test_a_commit_after_the_writer_row_was_deleted_writes_nothing(durable_database):
    db = durable_database
    with open_saver(db) as saver:
        app = chain_graph().compile(checkpointer=saver)
        with saver.lock("t"):
            app.invoke({"goal": 1}, CONFIG)
            # what a damaged or hand-edited database holds
            with open_saver(db) as other, other.store.transaction() as tx:
                tx.cursor.execute("DELETE FROM cortex_writers")
            rows = table_rows(db)  # LangGraph's tables and the substrate's
            with pytest.raises(WriterFenced, match="writer row is gone"):
                app.invoke({"goal": 2}, CONFIG)
            assert table_rows(db) == rows
        assert saver.substrate(CONFIG) == expected_log(1)


@pytest.mark.postgres
@pytest.mark.parametrize("nested", [False, True], ids=["plain", "nested-pipeline"])
def test_a_pipelined_commit_that_raises_after_its_writes_were_sent_commits_none(
    postgres_url, nested
):
    """Nothing of a failed commit lands, also when a pipeline opened inside it (psycopg syncs
    when a nested pipeline opens and closes: the transaction must survive those syncs)."""
    events = [event_from_dict(e) for e in stage_events(0)]
    with open_saver(postgres_url) as saver:
        store = saver.store
        rows = store.counts()

        def send_then_fail() -> None:
            with store.atomic(saver.serde, pipelined=True):
                assert store.append("t", "", None, events).seq == len(events)  # sent
                if nested:
                    with store.conn.pipeline():
                        store.conn.execute("SELECT 1")
                raise RuntimeError("after the writes")

        with pytest.raises(RuntimeError, match="after the writes"):
            send_then_fail()
        assert store.counts() == rows  # the sync that ended the pipeline committed nothing
        assert store.append("t", "", None, events).seq == len(events)  # the connection works
        assert store.counts()["events"] == rows["events"] + len(events)


def test_a_fenced_first_commit_that_must_read_a_new_branch_key_writes_nothing(durable_database):
    """The commit reads (a new branch's key) after the unanswered fence check: still fenced."""
    from langgraph.checkpoint.base import empty_checkpoint

    db = durable_database
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"]["substrate"] = expected_log(1)  # the thread's first events
    with open_saver(db) as saver, saver.lock("t"):
        with open_saver(db) as other:  # another writer took the thread meanwhile
            assert other.store.claim_writer("t") == 2
        rows = table_rows(db)
        with pytest.raises(WriterFenced, match=r"writer epoch 2; this writer held 1"):
            saver.put(CONFIG, checkpoint, {"source": "input", "step": -1}, {})
        assert table_rows(db) == rows
        assert saver.store.counts()["branches"] == 0
