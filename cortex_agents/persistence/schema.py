"""The substrate tables, owned in code, with versioned migrations per dialect.

``cortex_migrations`` records every applied version. :func:`migrate` applies
the missing ones in order, in one transaction, and refuses a database that a
newer cortex-agents already migrated beyond what this code knows.

Tables (v1):

``cortex_branches``
    one row per branch: its thread and namespace, its parent branch and
    the parent seq it continues from (``base_seq``).
``cortex_events``
    one row per event, keyed ``(branch_pk, seq)``; ``body`` is the event's
    compact JSON as text (JSON *text*, so output key order is kept).
``cortex_nodes`` / ``cortex_edges``
    one row per ``node_scheduled`` / ``edge_added`` event, each with a
    foreign key to its event row; edges reference node rows, so the
    database rejects an edge whose endpoints do not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from cortex_agents.errors import StorageError

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "migrate"]

Dialect = Literal["sqlite", "postgres"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its statements per dialect."""

    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(
        version=1,
        name="substrate tables",
        sqlite=(
            """CREATE TABLE cortex_branches (
                branch_pk INTEGER PRIMARY KEY AUTOINCREMENT,
                thread_id TEXT NOT NULL,
                checkpoint_ns TEXT NOT NULL,
                parent_pk INTEGER REFERENCES cortex_branches (branch_pk),
                base_seq INTEGER NOT NULL CHECK (base_seq >= 0)
            )""",
            "CREATE INDEX cortex_branches_by_thread ON cortex_branches (thread_id, checkpoint_ns)",
            """CREATE TABLE cortex_events (
                branch_pk INTEGER NOT NULL REFERENCES cortex_branches (branch_pk),
                seq INTEGER NOT NULL CHECK (seq >= 1),
                body TEXT NOT NULL,
                PRIMARY KEY (branch_pk, seq)
            ) WITHOUT ROWID""",
            """CREATE TABLE cortex_nodes (
                node_pk INTEGER PRIMARY KEY AUTOINCREMENT,
                branch_pk INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                node_id TEXT NOT NULL,
                UNIQUE (branch_pk, node_id),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_edges (
                branch_pk INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                source_pk INTEGER NOT NULL REFERENCES cortex_nodes (node_pk),
                target_pk INTEGER NOT NULL REFERENCES cortex_nodes (node_pk),
                PRIMARY KEY (branch_pk, seq),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            ) WITHOUT ROWID""",
        ),
        postgres=(
            """CREATE TABLE cortex_branches (
                branch_pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                thread_id TEXT NOT NULL,
                checkpoint_ns TEXT NOT NULL,
                parent_pk BIGINT REFERENCES cortex_branches (branch_pk),
                base_seq BIGINT NOT NULL CHECK (base_seq >= 0)
            )""",
            "CREATE INDEX cortex_branches_by_thread ON cortex_branches (thread_id, checkpoint_ns)",
            """CREATE TABLE cortex_events (
                branch_pk BIGINT NOT NULL REFERENCES cortex_branches (branch_pk),
                seq BIGINT NOT NULL CHECK (seq >= 1),
                body TEXT NOT NULL,
                PRIMARY KEY (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_nodes (
                node_pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                branch_pk BIGINT NOT NULL,
                seq BIGINT NOT NULL,
                node_id TEXT NOT NULL,
                UNIQUE (branch_pk, node_id),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
            """CREATE TABLE cortex_edges (
                branch_pk BIGINT NOT NULL,
                seq BIGINT NOT NULL,
                source_pk BIGINT NOT NULL REFERENCES cortex_nodes (node_pk),
                target_pk BIGINT NOT NULL REFERENCES cortex_nodes (node_pk),
                PRIMARY KEY (branch_pk, seq),
                FOREIGN KEY (branch_pk, seq) REFERENCES cortex_events (branch_pk, seq)
            )""",
        ),
    ),
)

LATEST_VERSION: Final = MIGRATIONS[-1].version


def migrate(
    execute: Callable[[str, Sequence[Any]], Any],
    fetch_versions: Callable[[], list[int]],
    dialect: Dialect,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> list[int]:
    """Apply missing migrations inside the caller's transaction; return the versions applied.

    Args:
        execute: Runs one statement with parameters.
        fetch_versions: Returns the versions recorded in ``cortex_migrations``.
        dialect: Which statements to run.
        migrations: The known migrations, in version order.

    Raises:
        StorageError: the database holds a version this code does not know.
    """
    execute(
        "CREATE TABLE IF NOT EXISTS cortex_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        (),
    )
    applied = set(fetch_versions())
    known = {m.version for m in migrations}
    if unknown := sorted(applied - known):
        raise StorageError(
            "schema_too_new",
            f"the database has cortex schema version {unknown[-1]}, newer than this "
            f"cortex-agents knows ({max(known)}); upgrade cortex-agents",
        )
    done = []
    placeholder = "?" if dialect == "sqlite" else "%s"
    for migration in migrations:
        if migration.version in applied:
            continue
        for statement in getattr(migration, dialect):
            execute(statement, ())
        execute(
            f"INSERT INTO cortex_migrations (version, name) VALUES ({placeholder}, {placeholder})",
            (migration.version, migration.name),
        )
        done.append(migration.version)
    return done
