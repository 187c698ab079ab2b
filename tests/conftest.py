"""Fixtures shared by every test module.

Postgres tests use a real server: ``CORTEX_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``). Each test gets its own
database, dropped afterwards. When the server is unreachable the tests skip
with the reason shown — except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")

POSTGRES_URL = os.environ.get(
    "CORTEX_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def _database_url(base: str, name: str) -> str:
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The reachable server's URL; skip (or fail under CI=true) when it is not reachable."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=5) as conn:
            conn.execute("select 1")
    except Exception as exc:  # any failure to reach the server means the same thing here
        reason = f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: Postgres tests must run)")
        pytest.skip(reason)
    return POSTGRES_URL


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server, dropped after the test."""
    import psycopg

    name = f"cortex_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _database_url(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
