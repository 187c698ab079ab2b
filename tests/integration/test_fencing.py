"""Fencing: a writer that lost its lock never writes over the writer that took the thread.

Each test takes the lock away from a running writer as the world would (the lock file
deleted; the advisory lock's connection terminated), lets a second writer in, and checks
at the substrate and in LangGraph's tables that nothing the first one committed was
replaced, and that the first one stopped with WriterFenced. Ordering is by events and
pipes, never by sleeping.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cortex_agents.errors import StorageError, WriterFenced
from cortex_agents.persistence import aopen_saver, memory_saver, open_saver
from cortex_agents.runtime import Runtime, StageContext, WireBuilder
from cortex_agents.substrate import StageStarted
from tests.support.fencing import lose_lock, table_rows
from tests.support.graphs import chain_graph, expected_log

CONFIG = {"configurable": {"thread_id": "t"}}
WIRE = Path(__file__).with_name("fencing_wire.py")


def completed(saver: Any) -> dict[str, Any]:
    """The thread's committed completions: stage id -> output."""
    log = saver.substrate(CONFIG)
    return {} if log is None else {n.id: n.output for n in log.state.nodes.values() if n.settled}


def test_each_lock_raises_the_writer_epoch_and_a_deleted_thread_keeps_it(backend, open_db):
    with open_db() as saver:
        assert [saver.store.claim_writer("t") for _ in range(2)] == [1, 2]
        with saver.lock("t"):
            app = chain_graph().compile(checkpointer=saver)
            app.invoke({"goal": 1}, CONFIG)
        saver.delete_thread("t")
        # a recreated thread never hands out an epoch a stale writer may still hold
        assert saver.store.claim_writer("t") == 4
        assert saver.store.claim_writer("other") == 1


def test_a_commit_after_another_writer_took_the_thread_writes_nothing(durable_database):
    db = durable_database
    with open_saver(db) as a, open_saver(db) as b:
        first, second = (chain_graph().compile(checkpointer=s) for s in (a, b))
        with a.lock("t"):
            first.invoke({"goal": 2}, CONFIG)
            assert lose_lock(db, "t") == 1
            with b.lock("t", timeout=0):  # the lock is gone: the second writer gets in
                assert second.get_state(CONFIG).values["steps"] == 2  # all the first committed
                second.invoke({"goal": 3}, CONFIG)
                rows = table_rows(db)
                with pytest.raises(WriterFenced) as caught:
                    first.update_state(CONFIG, {"label": "late"})  # a checkpoint
                head = first.get_state(CONFIG).config
                with pytest.raises(WriterFenced):
                    a.put_writes(head, [("label", "late")], "late-task")  # pending writes
                assert table_rows(db) == rows  # neither wrote a row
        assert caught.value.thread_id == "t"
        assert "another writer took the thread (writer epoch 2; this writer held 1)" in str(
            caught.value
        )
        final = second.get_state(CONFIG)
        assert final.values["steps"] == 3 and final.values["substrate"] == expected_log(3)
        assert all(not w for w in (final.tasks or ()))  # no pending write of the first writer


@pytest.mark.asyncio
async def test_an_async_commit_of_a_fenced_writer_writes_nothing(durable_database):
    db = durable_database
    async with aopen_saver(db) as a:
        first = chain_graph().compile(checkpointer=a)
        async with a.alock("t"):
            await first.ainvoke({"goal": 1}, CONFIG)
            await asyncio.to_thread(lose_lock, db, "t")
            with open_saver(db) as b, b.lock("t", timeout=0):
                rows = await asyncio.to_thread(table_rows, db)
                with pytest.raises(WriterFenced):
                    await first.aupdate_state(CONFIG, {"label": "late"})
                assert await asyncio.to_thread(table_rows, db) == rows


class Chain:
    """A chain wire s0..s5 whose outputs name their writer; writer A's ``hold_at`` body waits."""

    def __init__(self, hold_at: str) -> None:
        self.hold_at = hold_at
        self.began: list[tuple[str, str]] = []
        self.in_flight = threading.Event()
        self.release = threading.Event()
        builder = WireBuilder("chain").kind("step", self.body)
        for i in range(6):
            builder.stage(f"s{i}", "step", after=[f"s{i - 1}"] if i else [])
        self.wire = builder.build()

    def body(self, ctx: StageContext) -> dict[str, str]:
        writer = ctx.extras["writer"]
        self.began.append((writer, ctx.stage_id))
        if writer == "A" and ctx.stage_id == self.hold_at:
            self.in_flight.set()
            assert self.release.wait(120)
        return {"writer": writer}

    def start(self, saver: Any) -> tuple[threading.Thread, list[BaseException]]:
        """Writer A's run in a thread; its error lands in the returned list."""
        errors: list[BaseException] = []
        # sync durability: when a body begins, the supersteps before it are committed
        runtime = Runtime(self.wire, saver, services={"writer": "A"}, durability="sync")

        def run() -> None:
            try:
                runtime.run("t")
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        assert self.in_flight.wait(120)
        return thread, errors


def test_a_run_that_lost_its_lock_stops_and_replaces_nothing(durable_database):
    db = durable_database
    chain = Chain(hold_at="s3")
    with open_saver(db) as a, open_saver(db) as b, open_saver(db) as reader:
        thread, errors = chain.start(a)
        before = completed(reader)
        assert before == {f"s{i}": {"writer": "A"} for i in range(3)}
        lose_lock(db, "t")
        result = Runtime(chain.wire, b, services={"writer": "B"}).run("t")  # gets in at once
        chain.release.set()  # A's body in flight ends now, after B took the thread
        thread.join(120)
        assert len(errors) == 1 and isinstance(errors[0], WriterFenced), errors
        after = completed(reader)
        assert {k: after[k] for k in before} == before  # nothing completed was replaced
        assert after == result.outputs and result.complete
        assert [after[f"s{i}"]["writer"] for i in range(3, 6)] == ["B"] * 3
        # A began no body after the loss: s3 was in flight, and it stopped there
        assert [s for w, s in chain.began if w == "A"] == ["s0", "s1", "s2", "s3"]
        # LangGraph's tables: no checkpoint of A landed after B took over. The history is
        # one line, each checkpoint's substrate a prefix of the head's, and s3 started once
        # in it (B's run), which A's late commit would have made twice.
        final = reader.substrate(CONFIG)
        for state in chain_history(reader):
            log = state.values.get("substrate")
            assert log is None or final.prefix(len(log)).digest == log.digest
        starts = [e.node_id for e in final if isinstance(e, StageStarted)]
        assert starts.count("s3") == 1


def chain_history(saver: Any) -> list[Any]:
    app = Runtime(Chain("none").wire, saver).graph
    return list(app.get_state_history(CONFIG))


def test_a_writer_whose_lock_went_away_stops_before_the_next_stage(durable_database):
    db = durable_database
    chain = Chain(hold_at="s2")
    with open_saver(db) as a:
        thread, errors = chain.start(a)
        lose_lock(db, "t")  # nobody takes the thread: A notices alone, before its next body
        chain.release.set()
        thread.join(120)
    assert len(errors) == 1 and isinstance(errors[0], WriterFenced), errors
    assert "lock" in errors[0].reason
    assert [s for _, s in chain.began] == ["s0", "s1", "s2"]
    with open_saver(db) as again:  # resumed: what A completed stays, the rest runs once
        result = Runtime(chain.wire, again, services={"writer": "B"}).run("t")
    assert result.complete
    assert [result.outputs[f"s{i}"]["writer"] for i in range(6)] == ["A"] * 3 + ["B"] * 3
    assert [s for w, s in chain.began if w == "B"] == ["s3", "s4", "s5"]


def test_a_lock_file_replaced_under_its_holder_is_a_lost_lock(tmp_path):
    db = str(tmp_path / "cortex.db")
    with open_saver(db) as saver, saver.lock("t"):
        saver.check_writer("t")  # held: nothing to say
        other = tmp_path / "other"
        other.write_bytes(b"")
        os.replace(other, f"{db}.cortex-locks")
        with pytest.raises(WriterFenced, match="was replaced by another file") as caught:
            saver.check_writer("t")
        assert caught.value.thread_id == "t" and caught.value.code == "writer_fenced"
        saver.check_writer("another thread")  # not held by this saver: nothing to check


def test_a_damaged_writer_row_refuses_the_commit_as_corrupt(tmp_path):
    import sqlite3

    db = str(tmp_path / "cortex.db")
    with open_saver(db) as saver, saver.lock("t"):
        app = chain_graph().compile(checkpointer=saver)
        app.invoke({"goal": 1}, CONFIG)
        conn = sqlite3.connect(db)
        conn.execute("UPDATE cortex_writers SET epoch = 'x' WHERE thread_id = 't'")
        conn.commit()
        conn.close()
        rows = table_rows(db)
        with pytest.raises(StorageError, match="not an epoch") as caught:
            app.update_state(CONFIG, {"label": "late"})
        assert caught.value.code == "corrupt" and table_rows(db) == rows


def test_the_in_memory_backend_holds_its_lock_for_the_run():
    chain = Chain(hold_at="none")
    saver = memory_saver()
    result = Runtime(chain.wire, saver, services={"writer": "A"}).run("t")
    assert result.complete and saver.store.claim_writer("t") == 2  # the run claimed epoch 1


# -- the CLI ---------------------------------------------------------------------------------


def start_cli(db: str, writer: str, log: Path, hold_at: str = "") -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "FENCING_WRITER": writer,
        "FENCING_LOG": str(log),
        "FENCING_HOLD_AT": hold_at,
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "-m", "cortex_agents", "run", str(WIRE), "--db", db]
    return subprocess.Popen(
        [*command, "--thread", "t", "--lock-timeout", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def wait_committed(db: str, stages: list[str], timeout: float = 60.0) -> dict[str, Any]:
    """The committed completions once ``stages`` are among them (the CLI commits in the background)."""
    deadline = time.monotonic() + timeout
    with open_saver(db) as reader:
        while True:
            now = completed(reader)
            if set(stages) <= set(now) or time.monotonic() > deadline:
                return now
            time.sleep(0.01)


def test_the_cli_run_of_a_fenced_writer_exits_non_zero_naming_the_thread(
    durable_database, tmp_path
):
    db, log = durable_database, tmp_path / "began.log"
    first = start_cli(db, "A", log, hold_at="s3")
    assert first.stdout is not None and first.stdin is not None
    for line in first.stdout:  # "running ...", the stages' lines, then the held body's
        if line.startswith("in flight s3"):
            break
    before = wait_committed(db, ["s0", "s1", "s2"])
    assert before == {f"s{i}": {"writer": "A"} for i in range(3)}
    lose_lock(db, "t")
    second = start_cli(db, "B", log)
    output, _ = second.communicate(timeout=300)
    assert second.returncode == 0, output
    first.stdin.write("\n")
    first.stdin.flush()
    rest, _ = first.communicate(timeout=300)
    assert first.returncode == 1
    assert "error: writer of thread 't' stopped:" in rest
    with open_saver(db) as reader:
        after = completed(reader)
    assert {k: after[k] for k in before} == before
    assert [after[f"s{i}"]["writer"] for i in range(3, 8)] == ["B"] * 5
    began = log.read_text().split("\n")
    assert [line for line in began if line.startswith("A ")] == ["A s0", "A s1", "A s2", "A s3"]
