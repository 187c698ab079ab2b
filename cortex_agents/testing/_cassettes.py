"""Cassettes: record LLM HTTP exchanges once, replay them with the network blocked.

Every cassette is written and read with :func:`cassette_config`: requests
match on method, URL *and body* (a changed prompt is an error, not a stale
answer), credentials are never stored (auth headers and key query
parameters are filtered; overrides add to that list, never replace it), and
nothing is saved when the block raises. vcrpy patches the OpenAI client's
HTTP layer (``httpx2`` for openai 3.x, and ``httpx``), so ``ChatOpenAI`` and
any client built on them are covered.

Record modes (pytest-recording's names, :data:`RECORD_MODES`):

- ``none``: replay only, the network blocked; an unrecorded request raises.
- ``once``: record when the cassette does not exist, otherwise replay it
  (new requests raise).
- ``new_episodes``: replay what matches, record and append what does not.
- ``all`` (and its pytest-recording name ``rewrite``): record everything
  from scratch into ``<cassette>.recording``, which replaces the cassette
  only when the block succeeds — a failed recording leaves the old one.

vcrpy is imported when a cassette is used, not when this module is, so the
pytest plugin can be registered in environments without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from cortex_agents.errors import InvalidArgument, MissingCassette
from cortex_agents.testing._network import network_blocked

if TYPE_CHECKING:
    # vcrpy ships no type information (no py.typed, no stubs): its objects are Any here.
    import vcr  # type: ignore[import-untyped]
    from vcr.cassette import Cassette  # type: ignore[import-untyped]

__all__ = [
    "MATCH_ON",
    "RECORD_MODES",
    "SECRET_HEADERS",
    "RecordMode",
    "cassette_config",
    "cassette_vcr",
    "record",
    "replay",
    "use_cassette",
]

MATCH_ON: Final = ("method", "scheme", "host", "port", "path", "query", "body")
SECRET_HEADERS: Final = (
    "authorization",
    "api-key",
    "x-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
)
"""Request headers never written to a cassette."""

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: Final[tuple[str, ...]] = get_args(RecordMode)

_MERGED_LISTS: Final = ("filter_headers", "filter_query_parameters")
_NOT_FOR_VCR: Final = ("allowed_hosts", "record_mode")


def _filter_name(entry: Any) -> str:
    return str(entry[0] if isinstance(entry, list | tuple) else entry).lower()


def _union(base: Iterable[Any], extra: Iterable[Any]) -> list[Any]:
    merged = list(base)
    names = {_filter_name(entry) for entry in merged}
    for entry in extra:
        if _filter_name(entry) not in names:
            merged.append(entry)
            names.add(_filter_name(entry))
    return merged


def cassette_config(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``vcr.VCR`` settings of a cortex cassette, with ``overrides`` laid on top.

    Return it from a pytest-recording ``vcr_config`` fixture to give that
    plugin these defaults. ``filter_headers`` and
    ``filter_query_parameters`` in ``overrides`` are added to the defaults,
    so the credentials stay filtered; every other key replaces its default.

    Args:
        overrides: ``vcr.VCR`` keyword arguments, e.g. ``{"match_on": [...]}``.

    Returns:
        A new dict of keyword arguments.
    """
    config: dict[str, Any] = {
        "match_on": MATCH_ON,
        "filter_headers": list(SECRET_HEADERS),
        "filter_query_parameters": ["api-key", "key"],
        "decode_compressed_response": True,
        "record_on_exception": False,
    }
    for key, value in (overrides or {}).items():
        config[key] = _union(config[key], value) if key in _MERGED_LISTS else value
    return config


def cassette_vcr(overrides: Mapping[str, Any] | None = None) -> vcr.VCR:
    """A ``vcr.VCR`` with :func:`cassette_config`'s settings (and ``overrides``)."""
    import vcr

    settings = {k: v for k, v in cassette_config(overrides).items() if k not in _NOT_FOR_VCR}
    return vcr.VCR(**settings)


@contextmanager
def replay(
    path: str | Path,
    *,
    block_network: bool = True,
    allow_unused: bool = True,
    config: Mapping[str, Any] | None = None,
    allowed_hosts: Iterable[str] = (),
) -> Iterator[Cassette]:
    """Play a cassette back; an unrecorded request raises, the network is blocked.

    Args:
        path: The cassette file (it must exist).
        block_network: Refuse any socket connection meanwhile.
        allow_unused: Whether leaving recorded exchanges unplayed is fine.
        config: ``vcr.VCR`` overrides (see :func:`cassette_config`).
        allowed_hosts: Hosts still reachable while the network is blocked.

    Raises:
        MissingCassette: There is no cassette at ``path`` (a ``FileNotFoundError``).
    """
    cassette_path = Path(path)
    if not cassette_path.is_file():
        raise MissingCassette(str(cassette_path))
    guard = network_blocked(allowed_hosts) if block_network else nullcontext()
    player = cassette_vcr(config).use_cassette(str(cassette_path), record_mode="none")
    with guard, player as cassette:
        yield cassette
        if not allow_unused and not cassette.all_played:
            raise AssertionError(
                f"{cassette_path}: {len(cassette.data) - cassette.play_count} recorded exchanges unplayed"
            )


@contextmanager
def record(
    path: str | Path,
    *,
    mode: Literal["all", "new_episodes", "once"] = "all",
    config: Mapping[str, Any] | None = None,
) -> Iterator[Cassette]:
    """Record live exchanges into a cassette (``all`` rewrites it from scratch).

    With ``all`` the new recording goes to ``<path>.recording`` and replaces
    the cassette only when the block succeeds: a failed recording (the
    endpoint down, a test failing) leaves the old cassette as it was. With
    ``once`` and ``new_episodes`` vcrpy saves nothing when the block raises.
    """
    cassette_path = Path(path)
    cassette_path.parent.mkdir(parents=True, exist_ok=True)
    if mode != "all":
        with cassette_vcr(config).use_cassette(str(cassette_path), record_mode=mode) as cassette:
            yield cassette
        return
    temporary = cassette_path.with_name(f"{cassette_path.name}.recording")
    temporary.unlink(missing_ok=True)
    try:
        with cassette_vcr(config).use_cassette(str(temporary), record_mode="all") as cassette:
            yield cassette
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if temporary.exists():
        os.replace(temporary, cassette_path)


def use_cassette(
    path: str | Path,
    mode: str = "none",
    *,
    config: Mapping[str, Any] | None = None,
    allowed_hosts: Iterable[str] = (),
) -> AbstractContextManager[Cassette]:
    """The cassette at ``path`` in record mode ``mode`` (see the module docstring).

    Raises:
        InvalidArgument: ``mode`` is not one of :data:`RECORD_MODES`.
    """
    if mode == "none":
        return replay(path, config=config, allowed_hosts=allowed_hosts)
    if mode in {"all", "rewrite"}:
        return record(path, mode="all", config=config)
    if mode == "once":
        return record(path, mode="once", config=config)
    if mode == "new_episodes":
        return record(path, mode="new_episodes", config=config)
    raise InvalidArgument("record_mode", f"must be one of {', '.join(RECORD_MODES)}", mode)
