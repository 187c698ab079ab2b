"""What :func:`~cortex_agents.persistence.open_saver` returns: a context manager, not a saver.

A saver on a database owns a connection, so it is opened for a lifetime and
closed at its end: ``with open_saver("x.db") as saver: graph.compile(checkpointer=saver)``.
Handing the context manager itself to LangGraph (``checkpointer=open_saver("x.db")``)
is the easy mistake. LangGraph's own check refuses anything that is not a
``BaseCheckpointSaver`` with a message that does not say what to write instead,
and a plain ``@contextmanager`` object would reach it.

So, at run time only, these classes also derive from ``BaseCheckpointSaver``
(through :class:`~cortex_agents.persistence._misuse.RefusingSaver`): ``compile``
accepts them, and the first thing LangGraph asks of its checkpointer raises
:class:`~cortex_agents.errors.InvalidArgument` with the ``with`` line to write;
``mypy`` still flags the mistake before it runs. Nothing is opened until
``__enter__``: a misused context manager holds no connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING

from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence._misuse import RefusingSaver, misused

if TYPE_CHECKING:
    from cortex_agents.persistence._saver import CortexSaver

__all__ = ["AsyncSaverContext", "SaverContext", "misused"]


class SaverContext(RefusingSaver, AbstractContextManager["CortexSaver"]):
    """A context manager yielding a :class:`CortexSaver` that is closed on exit.

    Not a saver itself: ``checkpointer=open_saver(db)`` fails on the graph's
    first step, naming the ``with`` statement to write.
    """

    def __init__(self, call: str, opener: Callable[[], Iterator[CortexSaver]]) -> None:
        self._call = call
        self._asynchronous = False
        self._opener = opener
        self._opened: AbstractContextManager[CortexSaver] | None = None

    def __enter__(self) -> CortexSaver:
        from contextlib import contextmanager

        if self._opened is not None:
            raise InvalidArgument(
                "saver", "is already open: call open_saver(...) again for another", self._call
            )
        self._opened = contextmanager(self._opener)()
        return self._opened.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._opened is not None  # __exit__ follows __enter__
        return self._opened.__exit__(exc_type, exc, traceback)


class AsyncSaverContext(RefusingSaver, AbstractAsyncContextManager["CortexSaver"]):
    """An async context manager yielding a :class:`CortexSaver` that is closed on exit.

    Not a saver itself: ``checkpointer=aopen_saver(db)`` fails on the graph's
    first step, naming the ``async with`` statement to write.
    """

    def __init__(self, call: str, opener: Callable[[], AsyncIterator[CortexSaver]]) -> None:
        self._call = call
        self._asynchronous = True
        self._opener = opener
        self._opened: AbstractAsyncContextManager[CortexSaver] | None = None

    async def __aenter__(self) -> CortexSaver:
        from contextlib import asynccontextmanager

        if self._opened is not None:
            raise InvalidArgument(
                "saver", "is already open: call aopen_saver(...) again for another", self._call
            )
        self._opened = asynccontextmanager(self._opener)()
        return await self._opened.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._opened is not None  # __aexit__ follows __aenter__
        return await self._opened.__aexit__(exc_type, exc, traceback)
