"""The repository's langgraph.json served by the real LangGraph Server (``langgraph dev``).

The server runs in a subprocess (in-memory runtime, LangSmith tracing and CLI
analytics off, bound to 127.0.0.1), with cortex-agents' custom checkpointer
on a SQLite file. A thread of ``fanout_demo`` is run and streamed through
``langgraph_sdk``; then ``cortex-agents export`` reads that thread from the
database the server wrote, and ``memory query`` on what the reviewer saw
reproduces the ranking the server streamed.

On Postgres (``CORTEX_SERVER_DB=postgresql://...``, a fresh database), a
wire of the tests' own (``tests/support/server_wire.py``) serves two runs at once:
both complete, overlap in time, validate and export.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cortex_agents.persistence import Cursor, export_document, open_saver
from cortex_agents.snapshotfile import dump_snapshot
from cortex_agents.substrate import StageCompleted, StageStarted, ToolCallMade
from tests.support.schema_chat import SchemaChat, serve_schema_chat

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STARTUP_S = 120.0
CLAIM = {"claim": "Remote work raises developer productivity."}


@dataclass
class Server:
    url: str
    log: Path
    workdir: Path
    db: Path | str
    process: subprocess.Popen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_env(db: Path | str, model_url: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "OPENAI_"))
    }
    env.update(
        CORTEX_SERVER_DB=str(db),
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",  # the CLI would otherwise report each command online
        NO_COLOR="1",
        # claim_review's LLM stages: a local endpoint answering from each request's schema
        OPENAI_BASE_URL=model_url,
        OPENAI_API_KEY="sk-local-test",
        CORTEX_MODEL="schema-chat",
    )
    return env


@contextmanager
def langgraph_dev(
    config: Path, workdir: Path, model_url: str = "", db: str | None = None, jobs: int = 1
) -> Iterator[Server]:
    """``langgraph dev`` on ``config``, run from ``workdir``; stopped (SIGINT) when the block ends.

    ``db``: the server's ``CORTEX_SERVER_DB`` (default: ``cortex.db`` in ``workdir``).
    ``jobs``: runs served at once (``langgraph dev`` runs one at a time by default,
    whatever its ``--help`` says).
    """
    database: Path | str = workdir / "cortex.db" if db is None else db
    log = workdir / "server.log"
    command = [
        str(BIN / "langgraph"),
        "dev",
        "--no-browser",
        "--no-reload",
        "--port",
        str(_free_port()),
        "--n-jobs-per-worker",
        str(jobs),
        "--config",
        str(config),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=_server_env(database, model_url),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = _wait_until_ready(process, log)
        yield Server(url, log, workdir, database, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(process: subprocess.Popen, log: Path) -> str:
    """The server's URL once it answers ``/ok`` (it may have moved to another free port)."""
    from langgraph_sdk import get_sync_client

    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"langgraph dev exited with {process.returncode}:\n{log.read_text()}")
        found = re.search(r"API: \S*?(http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        if found:
            try:
                with get_sync_client(url=found.group(1), timeout=5) as client:
                    client.http.get("/ok")
                return found.group(1)
            except Exception:  # not listening yet
                pass
        time.sleep(0.5)
    pytest.fail(f"langgraph dev did not start within {STARTUP_S:.0f} s:\n{log.read_text()}")


def cortex(*args: Any) -> subprocess.CompletedProcess:
    """The ``cortex-agents`` command, as a user runs it."""
    return subprocess.run(
        [str(BIN / "cortex-agents"), *map(str, args)], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def model() -> Iterator[SchemaChat]:
    with serve_schema_chat() as chat:
        yield chat


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: SchemaChat) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("langgraph-server")
    with langgraph_dev(ROOT / "langgraph.json", workdir, model.url) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[Any]:
    """A ``langgraph_sdk`` client of the module's server."""
    from langgraph_sdk import get_sync_client

    with get_sync_client(url=server.url) as sdk:
        yield sdk


def test_both_wires_are_served_with_their_schemas(client):
    served = {a["graph_id"]: a for a in client.assistants.search()}
    assert set(served) == {"fanout_demo", "claim_review"}
    for assistant in served.values():
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
        assert {"substrate", "input", "scanned"} <= set(schemas["state_schema"]["properties"])
    # the claim-review wire's stage kinds are its graph's nodes
    nodes = {
        n["id"]
        for n in client.assistants.get_graph(served["claim_review"]["assistant_id"])["nodes"]
    }
    assert {"scheduler", "planner", "analyst", "merge", "reviewer", "rewriter"} <= nodes


def test_a_fanout_thread_streams_persists_as_rows_and_exports(server, client, tmp_path):
    thread_id = client.threads.create()["thread_id"]
    updates = [
        part.data
        for part in client.runs.stream(
            thread_id, "fanout_demo", input={"input": CLAIM}, stream_mode="updates"
        )
        if part.event == "updates"
    ]
    events = [
        (node, event)
        for update in updates
        for node, written in update.items()
        for event in (written or {}).get("substrate", [])
    ]
    completed = {e["node_id"]: e["output"] for _, e in events if e["type"] == "stage_completed"}
    assert set(completed) == {"planner", "analyst-a", "analyst-b", "analyst-c", "merge", "reviewer"}
    assert {node for node, e in events if e.get("node_id") == "analyst-b"} == {
        "scheduler",
        "analyst",
    }
    streamed_ranking = completed["reviewer"]["ranking"]
    assert sorted(streamed_ranking) == ["analyst-a", "analyst-b", "analyst-c"]
    (run,) = client.runs.list(thread_id)
    assert run["status"] == "success"

    # the server's checkpointer wrote the substrate as rows: checkpoints hold cursors
    with open_saver(server.db) as saver:
        config = {"configurable": {"thread_id": thread_id}}
        log = saver.substrate(config)
        assert len(log) == len(events)
        assert saver.store.counts()["events"] == len(events)
        raw = [t.checkpoint["channel_values"].get("substrate") for t in saver.inner.list(config)]
        assert raw and all(v is None or Cursor.decode(v) is not None for v in raw)

    exported = cortex("export", server.db, "--thread", thread_id, "-o", tmp_path / "run.json")
    assert exported.returncode == 0, exported.stderr
    document = json.loads((tmp_path / "run.json").read_text())
    assert len(document["nodes"]) == 6 and len(document["edges"]) == 7
    assert {n["id"]: n["status"] for n in document["nodes"]}["reviewer"] == "completed"
    seen = tmp_path / "seen.json"
    exported = cortex(
        "export", server.db, "--thread", thread_id, "--as-seen-by", "reviewer", "-o", seen
    )
    assert exported.returncode == 0, exported.stderr
    query = cortex(
        "memory", "query", seen, "--origin", "reviewer", "--preset", "reviewer", "--json"
    )
    assert query.returncode == 0, query.stderr
    assert [row["node_id"] for row in json.loads(query.stdout)] == streamed_ranking


def test_claim_review_runs_its_llm_stages_and_memory_tool_under_the_server(server, client, model):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "claim_review", input={"input": CLAIM})
    (run,) = client.runs.list(thread_id)
    assert run["status"] == "success"
    with open_saver(server.db) as saver:
        log = saver.substrate({"configurable": {"thread_id": thread_id}})
    nodes = log.state.nodes
    assert set(nodes) == {
        "planner",
        "analyst-a",
        "analyst-b",
        "analyst-c",
        "merge",
        "reviewer",
        "rewriter",
    }
    assert all(n.status == "completed" for n in nodes.values())
    # the reviewer's model called cortex_memory_query inside the server, and the call is journaled
    calls = [e for e in log if isinstance(e, ToolCallMade) and e.node_id == "reviewer"]
    assert [c.tool for c in calls] == ["cortex_memory_query"]
    assert all(b["model"] == "schema-chat" for b in model.bodies)
    assert any(b.get("tools") for b in model.bodies)


def test_the_servers_own_thread_records_hold_the_state_and_nothing_fails_to_pickle(server, client):
    # the dev server pickles each thread's values (substrate included) to .langgraph_api/
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "fanout_demo", input={"input": CLAIM})
    server.process.send_signal(signal.SIGINT)  # shutting down flushes the records
    server.process.wait(timeout=30)
    records = (server.workdir / ".langgraph_api" / ".langgraph_ops.pckl").read_bytes()
    assert thread_id.encode() in records and b"stage_completed" in records
    log = server.log.read_text(errors="replace")
    assert "cannot pickle" not in log and "Traceback" not in log


def test_without_cortexs_checkpointer_a_run_fails_at_once_naming_the_fix(tmp_path):
    from langgraph_sdk import get_sync_client

    config = json.loads((ROOT / "langgraph.json").read_text())
    del config["checkpointer"]
    config["dependencies"] = [str(ROOT)]
    plain = tmp_path / "langgraph.json"
    plain.write_text(json.dumps(config))
    with langgraph_dev(plain, tmp_path) as running, get_sync_client(url=running.url) as client:
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, "fanout_demo", input={"input": CLAIM}, raise_error=False)
        (run,) = client.runs.list(thread_id)
        assert run["status"] == "error"
        log = running.log.read_text(errors="replace")
    assert "UnsupportedCheckpointer" in log and "CortexSaver.wrap(saver)" in log
    assert "cannot pickle" not in log
    assert not running.db.exists()  # nothing was written anywhere of ours


@pytest.mark.postgres
def test_two_concurrent_runs_on_a_postgres_server_db_complete_export_and_validate(
    tmp_path, postgres_url, monkeypatch
):
    # The server's checkpointer on CORTEX_SERVER_DB=postgresql://... (a fresh database):
    # two runs submitted together, served concurrently, both stored as rows there.
    from langgraph_sdk import get_sync_client

    # each run's first stage waits there until both runs are in flight (tests/support/server_wire.py):
    # a server that serialised them fails that stage, and the run's status says so
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    monkeypatch.setenv("CORTEX_TEST_MEETING", str(meeting))
    config = tmp_path / "langgraph.json"
    config.write_text(
        json.dumps(
            {
                "dependencies": [str(ROOT)],
                "graphs": {"waits": f"{ROOT / 'tests' / 'support' / 'server_wire.py'}:graph"},
                "checkpointer": {"path": "cortex_agents.server.checkpointer"},
            }
        )
    )
    with (
        langgraph_dev(config, tmp_path, db=postgres_url, jobs=2) as running,
        get_sync_client(url=running.url) as client,
    ):
        threads = [client.threads.create()["thread_id"] for _ in range(2)]
        runs = [
            client.runs.create(thread, "waits", input={"input": {"job": job}})
            for job, thread in enumerate(threads)
        ]
        for thread, run in zip(threads, runs, strict=True):
            client.runs.join(thread, run["run_id"])
        pairs = zip(threads, runs, strict=True)
        statuses = [client.runs.get(t, r["run_id"])["status"] for t, r in pairs]
        assert statuses == ["success", "success"]
        log = running.log.read_text(errors="replace")
    assert "Traceback" not in log
    assert not (tmp_path / ".langgraph_api" / "cortex.db").exists()  # nothing went to SQLite

    # both threads are in the Postgres database, valid, and export as the whole run
    checked = cortex("validate", postgres_url, "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    reports = {r["thread_id"]: r for r in json.loads(checked.stdout)}
    assert set(reports) == set(threads) and all(r["valid"] for r in reports.values())
    spans = []
    with open_saver(postgres_url) as saver:
        for job, thread in enumerate(threads):
            document = json.loads(dump_snapshot(export_document(saver, thread)))  # as `export`
            nodes = {n["id"]: n for n in document["nodes"]}
            errors = {i: n.get("error") for i, n in nodes.items() if n["status"] != "completed"}
            assert errors == {}  # e.g. a first stage that waited for the other run in vain
            assert {i: n["output"]["job"] for i, n in nodes.items()} == {
                "first": {"job": job},
                "second": {"job": job},
            }
            events = saver.substrate({"configurable": {"thread_id": thread}})
            times = [e.at for e in events if isinstance(e, StageStarted | StageCompleted)]
            spans.append((min(times), max(times)))
    # served concurrently: both first stages met (their marks), so each run was still going
    # when the other started, as the substrates' own times show
    assert sorted(p.name for p in meeting.iterdir()) == ["job-0", "job-1"]
    (start_a, end_a), (start_b, end_b) = spans
    assert max(start_a, start_b) < min(end_a, end_b)
