"""Persistence: the substrate behind LangGraph's checkpointers, at O(new events) per step.

:func:`open_saver` (sync) and :func:`aopen_saver` (async) give a
:class:`CortexSaver` over LangGraph's SQLite or Postgres saver with the
substrate tables in the same database; :func:`memory_saver` keeps both in
memory. Use the saver as any checkpointer, and hold :meth:`CortexSaver.lock`
around an invocation to keep one writer per thread.
"""

from cortex_agents.persistence.backends import (
    aopen_saver,
    is_postgres_url,
    memory_saver,
    open_saver,
    require_database,
)
from cortex_agents.persistence.inspection import (
    ThreadSummary,
    describe_thread,
    list_threads,
    thread_log,
)
from cortex_agents.persistence.locks import FileLocks, PostgresLocks, ProcessLocks, ThreadLocks
from cortex_agents.persistence.memory import InMemorySubstrateStore
from cortex_agents.persistence.saver import DEFAULT_CHANNEL, CortexSaver
from cortex_agents.persistence.sql import (
    PostgresSubstrateStore,
    SqliteSubstrateStore,
    sqlite_connect,
)
from cortex_agents.persistence.store import Cursor, SubstrateStore
from cortex_agents.persistence.transfer import (
    ImportReport,
    UnknownThread,
    document_events,
    export_document,
    import_document,
    thread_config,
)
from cortex_agents.persistence.view import SubstrateView, open_view

__all__ = [
    "DEFAULT_CHANNEL",
    "CortexSaver",
    "Cursor",
    "FileLocks",
    "ImportReport",
    "InMemorySubstrateStore",
    "PostgresLocks",
    "PostgresSubstrateStore",
    "ProcessLocks",
    "SqliteSubstrateStore",
    "SubstrateStore",
    "SubstrateView",
    "ThreadLocks",
    "ThreadSummary",
    "UnknownThread",
    "aopen_saver",
    "describe_thread",
    "document_events",
    "export_document",
    "import_document",
    "is_postgres_url",
    "list_threads",
    "memory_saver",
    "open_saver",
    "require_database",
    "open_view",
    "sqlite_connect",
    "thread_config",
    "thread_log",
]
