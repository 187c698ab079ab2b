"""Backends as fixture parameters: the same tests run on memory, a SQLite file and Postgres."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import pytest

from cortex_agents.persistence import CortexSaver, memory_saver, open_saver

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend's name."""
    return request.param


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest, tmp_path) -> str | None:
    """Where the backend keeps its data (``None`` for memory)."""
    if backend == "sqlite":
        return str(tmp_path / "cortex.db")
    if backend == "postgres":
        return request.getfixturevalue("postgres_url")
    return None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def durable_database(request: pytest.FixtureRequest, tmp_path) -> str:
    """A database that outlives the saver: a SQLite file or a Postgres database."""
    if request.param == "sqlite":
        return str(tmp_path / "cortex.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def open_db(database: str | None) -> Callable[[], AbstractContextManager[CortexSaver]]:
    """Open a saver on the test's database; each call opens it again (memory: the same saver)."""
    if database is None:
        shared = memory_saver()
        return lambda: nullcontext(shared)
    return lambda: open_saver(database)
