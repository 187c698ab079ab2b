"""Record a workflow's LLM HTTP exchanges once; replay them offline in tests.

:func:`replay` plays a cassette back with the network blocked: every request
must match a recorded one on method, URL *and body* (so a changed prompt is
an error, not a stale answer), auth headers are never stored, and record mode
is ``none``. :func:`record` writes a cassette from live exchanges. Both patch
the OpenAI client's HTTP layer (``httpx2`` for openai 3.x, and ``httpx``), so
``ChatOpenAI`` and any client built on them are covered.

For pytest, enable the fixture plugin in your ``conftest.py``::

    pytest_plugins = ["cortex_agents.testing.pytest_plugin"]

    def test_review(llm_cassette):
        with llm_cassette("cassettes/review.yaml"):
            result = runtime.run("t", {"claim": "..."})

and record with ``pytest --record-cassettes`` against a live endpoint.

Prompts must be byte-stable between runs for replay to match: inject the
clock (:class:`~cortex_agents.runtime.LogicalClock` keeps parallel stages'
times stable too), and render nothing unordered or random into a request.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Final, Literal

import vcr
from vcr.cassette import Cassette

from cortex_agents.errors import CortexError

__all__ = ["MATCH_ON", "NetworkBlocked", "cassette_vcr", "network_blocked", "record", "replay"]

MATCH_ON: Final = ("method", "scheme", "host", "port", "path", "query", "body")
_SECRET_HEADERS: Final = (
    "authorization",
    "api-key",
    "x-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
)


class NetworkBlocked(CortexError, ConnectionError):
    """Code tried to open a network connection while the network is blocked."""

    code = "network_blocked"


def cassette_vcr() -> vcr.VCR:
    """A VCR that matches on method, URL and body and never stores credentials."""
    return vcr.VCR(
        match_on=MATCH_ON,
        filter_headers=list(_SECRET_HEADERS),
        filter_query_parameters=["api-key", "key"],
        decode_compressed_response=True,
        record_on_exception=False,
    )


@contextmanager
def network_blocked() -> Iterator[None]:
    """Refuse every outgoing socket connection inside the block."""
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def refuse(sock: socket.socket, address: Any, *rest: Any) -> Any:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return real_connect(sock, address)  # local IPC is not the network
        raise NetworkBlocked(
            f"network access to {address!r} is blocked (replaying recorded exchanges)"
        )

    def refuse_ex(sock: socket.socket, address: Any) -> Any:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return real_connect_ex(sock, address)
        raise NetworkBlocked(
            f"network access to {address!r} is blocked (replaying recorded exchanges)"
        )

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse_ex  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]


@contextmanager
def replay(
    path: str | Path, *, block_network: bool = True, allow_unused: bool = True
) -> Iterator[Cassette]:
    """Play a cassette back; an unrecorded request raises, the network is blocked.

    Args:
        path: The cassette file (it must exist).
        block_network: Refuse any socket connection meanwhile.
        allow_unused: Whether leaving recorded exchanges unplayed is fine.
    """
    cassette_path = Path(path)
    if not cassette_path.is_file():
        raise FileNotFoundError(f"no cassette at {cassette_path}; record it first")
    guard = network_blocked() if block_network else nullcontext()
    with guard, cassette_vcr().use_cassette(str(cassette_path), record_mode="none") as cassette:
        yield cassette
        if not allow_unused and not cassette.all_played:
            raise AssertionError(
                f"{cassette_path}: {len(cassette.data) - cassette.play_count} recorded exchanges unplayed"
            )


@contextmanager
def record(
    path: str | Path, *, mode: Literal["all", "new_episodes", "once"] = "all"
) -> Iterator[Cassette]:
    """Record live exchanges into a cassette (``all`` rewrites it from scratch).

    With ``all`` the new recording goes to ``<path>.recording`` and replaces
    the cassette only when the block succeeds: a failed recording (the
    endpoint down, a test failing) leaves the old cassette as it was.
    """
    cassette_path = Path(path)
    cassette_path.parent.mkdir(parents=True, exist_ok=True)
    if mode != "all":
        with cassette_vcr().use_cassette(str(cassette_path), record_mode=mode) as cassette:
            yield cassette
        return
    temporary = cassette_path.with_name(f"{cassette_path.name}.recording")
    temporary.unlink(missing_ok=True)
    try:
        with cassette_vcr().use_cassette(str(temporary), record_mode="all") as cassette:
            yield cassette
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if temporary.exists():
        os.replace(temporary, cassette_path)
