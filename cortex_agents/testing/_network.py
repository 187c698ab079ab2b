"""Refuse outgoing network connections while recorded exchanges are replayed.

:func:`network_blocked` patches :meth:`socket.socket.connect` and
``connect_ex`` for the duration of a block, so any client — the OpenAI SDK,
``httpx``, ``urllib``, a database driver — that tries to reach a host raises
:class:`NetworkBlocked` instead. Unix-domain sockets are local IPC and stay
allowed; so do the hosts named in ``allowed_hosts`` (for a test that also
talks to a local database while it replays its LLM exchanges).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from cortex_agents.errors import NetworkBlocked

if TYPE_CHECKING:
    # The stubs declare `connect` on the C base class; the patched methods take its instances.
    from _socket import socket as RawSocket

__all__ = ["NetworkBlocked", "network_blocked"]


def _addresses(hosts: Iterable[str]) -> frozenset[str]:
    """The hosts and every address they resolve to (resolved before anything is blocked)."""
    found: set[str] = set()
    for host in hosts:
        found.add(host)
        with suppress(OSError):  # a name that does not resolve allows only itself
            found.update(str(info[4][0]) for info in socket.getaddrinfo(host, None))
    return frozenset(found)


@contextmanager
def network_blocked(allowed_hosts: Iterable[str] = ()) -> Iterator[None]:
    """Refuse every outgoing socket connection inside the block.

    Args:
        allowed_hosts: Host names or addresses that may still be reached,
            e.g. ``["127.0.0.1"]`` for a local Postgres. Names are resolved
            on entry.

    Raises:
        NetworkBlocked: (inside the block) on a connection to any other host.
    """
    allowed = _addresses(allowed_hosts)
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def permitted(sock: RawSocket, address: Any) -> bool:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return True  # local IPC is not the network
        host = address[0] if isinstance(address, tuple) and address else address
        return str(host) in allowed

    def refusal(address: Any) -> NetworkBlocked:
        return NetworkBlocked(
            f"network access to {address!r} is blocked (replaying recorded exchanges); "
            "allow a local service with `allowed_hosts`"
        )

    def refuse(sock: RawSocket, address: Any) -> None:
        if permitted(sock, address):
            return real_connect(sock, address)
        raise refusal(address)

    def refuse_ex(sock: RawSocket, address: Any) -> int:
        if permitted(sock, address):
            return real_connect_ex(sock, address)
        raise refusal(address)

    # Patching the class's methods is the point: every socket, whoever made it, is refused.
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse_ex  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
