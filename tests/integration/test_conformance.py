"""langgraph-checkpoint-conformance (0.0.2) base checks on every saver we ship."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from cortex_agents.persistence import aopen_saver, memory_saver


def registered(kind: str, tmp_path, postgres_url: str | None):
    @checkpointer_test(name=f"CortexSaver[{kind}]")
    async def factory():
        if kind == "memory":
            yield memory_saver()
            return
        # the suites count rows, so each gets a fresh database
        target = str(tmp_path / f"{uuid.uuid4().hex}.db") if kind == "sqlite" else postgres_url
        async with AsyncExitStack() as stack:
            if kind == "postgres":
                target = await stack.enter_async_context(_fresh_postgres(postgres_url))
            saver = await stack.enter_async_context(aopen_saver(target))
            yield saver

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
@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_conformance_base(kind, tmp_path, request):
    server = request.getfixturevalue("postgres_server") if kind == "postgres" else None
    report = await validate(registered(kind, tmp_path, server))
    assert report.passed_all_base(), report.to_dict()
    results = report.to_dict()["results"]
    for capability in ("put", "put_writes", "get_tuple", "list", "delete_thread"):
        assert results[capability]["tests_passed"] > 0, capability  # the suite really ran
