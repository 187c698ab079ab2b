"""A saver's context manager handed over where the saver belongs: refused, naming the fix.

:class:`~cortex_agents.persistence._saver_context.SaverContext` and
:class:`~cortex_agents.persistence._saver_context.AsyncSaverContext` derive from
:class:`RefusingSaver`. It lives here, apart from them, because
:func:`~cortex_agents.persistence._wrap.substrate_store` recognises it, and
``wrap`` sits below :class:`~cortex_agents.persistence._saver.CortexSaver`,
which the context managers name as what they yield: this module names no saver.

At run time only, :class:`RefusingSaver` also derives from ``BaseCheckpointSaver``:
``compile`` accepts it, and the first thing LangGraph asks of its
checkpointer (reading the thread's latest checkpoint, before any node runs)
raises :class:`~cortex_agents.errors.InvalidArgument` with the ``with`` line to
write. Type checkers do not see that base, so ``mypy`` still flags the mistake
before it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from cortex_agents.errors import InvalidArgument

if TYPE_CHECKING:
    _NotASaver = object
else:
    from langgraph.checkpoint.base import BaseCheckpointSaver as _NotASaver

__all__ = ["RefusingSaver", "misused"]


def misused(call: str, *, asynchronous: bool) -> InvalidArgument:
    """The error for a saver's context manager used as the saver itself."""
    opening = f"async with {call} as saver:" if asynchronous else f"with {call} as saver:"
    return InvalidArgument(
        "checkpointer",
        f"must be a saver, and {call} is a context manager that opens one for a lifetime: "
        f"write `{opening}` and pass `checkpointer=saver` inside the block "
        "(memory_saver() is a saver with no file to close)",
        call,
    )


class RefusingSaver(_NotASaver):  # type: ignore[misc, valid-type, unused-ignore]
    """A ``BaseCheckpointSaver`` at run time whose every checkpoint operation explains the misuse."""

    _call: str
    _asynchronous: bool

    def misuse(self) -> InvalidArgument:
        """The error for this context manager passed where its saver belongs."""
        return misused(self._call, asynchronous=self._asynchronous)

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise self.misuse()

    # what LangGraph calls first, sync and async, and the rest of the saver protocol
    get_tuple = aget_tuple = list = alist = _refuse
    put = aput = put_writes = aput_writes = _refuse
    delete_thread = adelete_thread = get_next_version = _refuse

    def __repr__(self) -> str:
        return f"<context manager {self._call}>"
