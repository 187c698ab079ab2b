"""Database addresses: a SQLite file path or a ``postgresql://`` URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cortex_agents.errors import MissingExtra, StorageError

__all__ = [
    "is_postgres_url",
    "postgres_reachable",
    "redact_url",
    "require_postgres_extra",
    "sqlite_path",
]


def is_postgres_url(db: str | Path) -> bool:
    """Whether ``db`` names a PostgreSQL database rather than a SQLite file."""
    return str(db).startswith(("postgresql://", "postgres://"))


def sqlite_path(db: str | Path) -> Path:
    """``db`` as a SQLite file path.

    Raises:
        StorageError: ``db`` is a URL of another kind (code ``unsupported_url``).
    """
    text = str(db)
    if "://" in text:
        raise StorageError(
            "unsupported_url",
            f"unsupported database {text!r}: give a SQLite file path or a postgresql:// URL",
        )
    return Path(text)


def redact_url(url: str) -> str:
    """The URL without its password."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, _, credentials = head.partition("://")
    return f"{scheme}://{credentials.split(':', 1)[0]}@{tail}"


def require_postgres_extra(feature: str = "a postgresql:// database") -> None:
    """Check that the ``[postgres]`` extra is installed (psycopg, langgraph-checkpoint-postgres).

    Raises:
        MissingExtra: a package of the extra is missing.
    """
    import importlib.util

    for module, package in (
        ("psycopg", "psycopg"),
        ("psycopg_pool", "psycopg-pool"),
        ("langgraph.checkpoint.postgres", "langgraph-checkpoint-postgres"),
        ("langgraph.store.postgres", "langgraph-checkpoint-postgres"),
    ):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise MissingExtra("postgres", feature, package)


@contextmanager
def postgres_reachable(url: str) -> Iterator[None]:
    """Turn a failure to connect into :class:`StorageError` (``unreachable``), password removed.

    Raises:
        MissingExtra: the ``[postgres]`` extra is not installed.
    """
    require_postgres_extra()
    import psycopg

    try:
        yield
    except psycopg.OperationalError as exc:
        raise StorageError(
            "unreachable", f"cannot connect to {redact_url(url)}: {exc}".strip()
        ) from None
