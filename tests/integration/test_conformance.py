"""langgraph-checkpoint-conformance (0.0.2) on every saver we ship, async and sync.

The suite drives the async API; the sync savers are driven through their sync methods
(``tests.support.conformance.sync_driven``). Besides the base capabilities every saver
offers the optional ones CortexSaver implements: copy_thread, delete_for_runs, prune.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from cortex_agents.persistence import aopen_saver, memory_saver, open_saver
from tests.support.conformance import fenced_writes, sync_driven

CAPABILITIES = (
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "copy_thread",
    "delete_for_runs",
    "prune",
)


def registered(kind: str, drive: str, tmp_path, postgres_url: str | None):
    @checkpointer_test(name=f"CortexSaver[{kind}]/{drive}")
    async def factory():
        if kind == "memory":
            saver = memory_saver()
            yield saver if drive == "async" else sync_driven(saver)
            return
        # the suites count rows, so each gets a fresh database
        target = str(tmp_path / f"{uuid.uuid4().hex}.db") if kind == "sqlite" else postgres_url
        async with AsyncExitStack() as stack:
            if kind == "postgres":
                target = await stack.enter_async_context(_fresh_postgres(postgres_url))
            if drive == "async":
                yield await stack.enter_async_context(aopen_saver(target))
            elif drive == "fenced-async":  # every write checks a writer epoch, as under a lock
                yield fenced_writes(await stack.enter_async_context(aopen_saver(target)))
            elif drive == "fenced-sync":
                yield sync_driven(fenced_writes(stack.enter_context(open_saver(target))))
            else:
                yield sync_driven(stack.enter_context(open_saver(target)))

    return factory


def _fresh_postgres(server_url: str):
    from contextlib import asynccontextmanager

    import psycopg

    @asynccontextmanager
    async def fresh():
        name = f"cortex_conf_{uuid.uuid4().hex[:10]}"
        async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
            await admin.execute(f'CREATE DATABASE "{name}"')
            try:
                yield f"{server_url.rpartition('/')[0]}/{name}"
            finally:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return fresh()


@pytest.mark.asyncio
@pytest.mark.parametrize("drive", ["async", "sync"])
@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_conformance(kind, drive, tmp_path, request):
    await _conformance(kind, drive, tmp_path, request)


@pytest.mark.asyncio
@pytest.mark.parametrize("drive", ["fenced-async", "fenced-sync"])
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_conformance_of_fenced_writes(kind, drive, tmp_path, request):
    """A lock holder's writes go through the store's transaction, whatever the inner saver."""
    await _conformance(kind, drive, tmp_path, request)


async def _conformance(kind, drive, tmp_path, request):
    server = request.getfixturevalue("postgres_server") if kind == "postgres" else None
    report = await validate(registered(kind, drive, tmp_path, server))
    results = report.to_dict()["results"]
    for capability in CAPABILITIES:  # every capability ran, and passed
        assert results[capability]["tests_passed"] > 0, (capability, results[capability])
        assert results[capability]["tests_failed"] == 0, (capability, results[capability])
