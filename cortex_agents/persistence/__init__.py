"""Persistence: the substrate behind LangGraph's checkpointers, at O(new events) per step.

One way to get a saver for each lifetime:

- a process, nothing on disk: :func:`memory_saver` returns a :class:`CortexSaver`
  keeping checkpoints and substrate in memory;
- a ``with`` block: :func:`open_saver` (sync) and :func:`aopen_saver` (async) are
  context managers (:class:`SaverContext`, :class:`AsyncSaverContext`) that
  open a :class:`CortexSaver` over LangGraph's SQLite or Postgres saver, with
  the substrate tables in the same database, and close it on exit. Pass the
  saver they yield, not the context manager: ``checkpointer=open_saver(db)``
  fails on the first step, naming the ``with`` line to write;
- a LangGraph saver whose lifetime you already manage:
  ``CortexSaver.wrap(saver)`` adopts it (any saver LangGraph ships).
 Use the saver as any checkpointer, and hold :meth:`CortexSaver.lock`
around an invocation to keep one writer per thread: while it is held, every commit
for the thread is fenced (a writer that lost the lock writes nothing once another
took the thread; :mod:`cortex_agents.persistence._fencing`), and the pending writes of a
task alone in its superstep are stored in the next checkpoint's transaction
(:mod:`cortex_agents.persistence._solo`). :func:`import_document`
writes a snapshot as a thread in one transaction; :func:`validate_thread`
checks a stored thread as a file would be checked.
"""

from cortex_agents.persistence._backends import (
    aopen_saver,
    check_writable,
    is_postgres_url,
    memory_saver,
    open_saver,
    require_database,
)
from cortex_agents.persistence._inmemory import InMemorySubstrateStore
from cortex_agents.persistence._inspection import (
    ThreadSummary,
    describe_thread,
    list_threads,
    thread_log,
)
from cortex_agents.persistence._locks import (
    FileLocks,
    Lease,
    PostgresLocks,
    ProcessLocks,
    ThreadLocks,
)
from cortex_agents.persistence._saver import DEFAULT_CHANNEL, CortexSaver
from cortex_agents.persistence._saver_context import AsyncSaverContext, SaverContext
from cortex_agents.persistence._sql import (
    PostgresSubstrateStore,
    SqliteSubstrateStore,
    sqlite_connect,
)
from cortex_agents.persistence._store import Cursor, SubstrateStore
from cortex_agents.persistence._transfer import (
    ImportReport,
    QuarantinedRow,
    UnknownThread,
    document_events,
    export_document,
    import_document,
    import_salvage,
    quarantined_rows,
    thread_config,
)
from cortex_agents.persistence._validation import ThreadReport, validate_thread
from cortex_agents.persistence._view import SubstrateView, open_view
from cortex_agents.persistence._wrap import require_substrate_saver

__all__ = [
    "DEFAULT_CHANNEL",
    "CortexSaver",
    "Cursor",
    "FileLocks",
    "ImportReport",
    "InMemorySubstrateStore",
    "Lease",
    "PostgresLocks",
    "PostgresSubstrateStore",
    "ProcessLocks",
    "QuarantinedRow",
    "SaverContext",
    "AsyncSaverContext",
    "SqliteSubstrateStore",
    "SubstrateStore",
    "SubstrateView",
    "ThreadLocks",
    "ThreadReport",
    "ThreadSummary",
    "UnknownThread",
    "aopen_saver",
    "check_writable",
    "describe_thread",
    "document_events",
    "export_document",
    "import_document",
    "import_salvage",
    "is_postgres_url",
    "list_threads",
    "memory_saver",
    "open_saver",
    "require_database",
    "require_substrate_saver",
    "open_view",
    "quarantined_rows",
    "sqlite_connect",
    "thread_config",
    "thread_log",
    "validate_thread",
]
