"""``@pytest.mark.vcr`` and its fixtures, in pytest-recording's conventions.

Registered by :mod:`~cortex_agents.testing.pytest_plugin` unless
pytest-recording is installed (which provides the same names). A test
marked ``vcr`` runs inside its cassette:

- **where**: ``<test dir>/cassettes/<test module>/<test name>.yaml`` — the
  ``vcr_cassette_dir`` fixture (module scope) and ``default_cassette_name``
  (``Class.test_name``, with characters a file name cannot hold replaced by
  ``-``), both overridable; or the marker's one path argument,
  ``@pytest.mark.vcr("shared/chat.yaml")``, relative to ``vcr_cassette_dir``
  unless absolute. (pytest-recording reads such extra paths as read-only
  cassettes played beside the default one; here the path *is* the test's
  cassette.)
- **how**: :func:`~cortex_agents.testing.cassette_config` (method, URL and
  body matched; auth headers filtered), then the ``vcr_config`` fixture,
  then the marker's keyword arguments, each laid over the one before;
  ``filter_headers`` add to the filtered list. The extra key
  ``allowed_hosts`` names hosts still reachable while the network is
  blocked (a local database).
- **record mode**: ``--record-mode`` when given, else the marker's or
  ``vcr_config``'s ``record_mode``, else ``none``. Under ``none`` the network
  is blocked and a missing cassette fails the test with the command that
  records it. The command line wins so that ``pytest path::test
  --record-mode=all`` always re-records exactly the selected tests'
  cassettes; unselected tests' cassettes are never opened.

A cassette is saved only when the test passed: a failing test leaves the
cassette it ran against as it was (``all`` writes ``<cassette>.recording``
and swaps it in on success).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

import pytest

from cortex_agents.errors import CassetteDiscarded

__all__ = ["default_cassette_name", "vcr", "vcr_cassette_dir", "vcr_config"]

_FAILED: Final = pytest.StashKey[bool]()
_FORBIDDEN_IN_NAMES: Final = "<>?%*:|\"'/\\"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember on the item whether its setup or call failed (the cassette's teardown reads it)."""
    report = yield
    if report.when in {"setup", "call"} and report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.fixture
def vcr_config() -> dict[str, Any]:
    """Settings laid over cortex's cassette settings for every ``vcr`` test; override it."""
    return {}


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    """``<test dir>/cassettes/<test module name>``: each module has its own cassettes."""
    module = Path(request.node.path)
    return str(module.parent / "cassettes" / module.stem)


@pytest.fixture
def default_cassette_name(request: pytest.FixtureRequest) -> str:
    """The test's name (``Class.test`` in a class), safe as a file name."""
    name = f"{request.cls.__name__}.{request.node.name}" if request.cls else request.node.name
    for char in _FORBIDDEN_IN_NAMES:
        name = name.replace(char, "-")
    return name


def _merged_kwargs(markers: list[pytest.Mark]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for marker in reversed(markers):  # the closest marker wins
        merged.update(marker.kwargs)
    return merged


def _cassette_path(markers: list[pytest.Mark], directory: str, name: str, nodeid: str) -> Path:
    paths = [arg for marker in markers for arg in marker.args]
    if len(paths) > 1:
        raise pytest.UsageError(
            f"{nodeid}: @pytest.mark.vcr takes at most one cassette path, got {paths!r}"
        )
    if not paths:
        return Path(directory) / f"{name}.yaml"
    given = Path(paths[0])
    return given if given.is_absolute() else Path(directory) / given


def _how_to_record(nodeid: str, path: Path) -> str:
    return (
        f"{nodeid}: no cassette at {path}; record it against the live endpoint with "
        f"`pytest '{nodeid}' --record-mode=once`"
    )


@pytest.fixture
def vcr(
    request: pytest.FixtureRequest,
    vcr_config: dict[str, Any],
    vcr_cassette_dir: str,
    default_cassette_name: str,
) -> Iterator[Any]:
    """The running test's cassette (a vcrpy ``Cassette``), or None when it is not marked ``vcr``."""
    markers = list(request.node.iter_markers(name="vcr"))
    if not markers:
        yield None
        return
    from cortex_agents.testing._cassettes import RECORD_MODES, use_cassette

    settings = {**vcr_config, **_merged_kwargs(markers)}
    mode = (
        request.config.getoption("--record-mode", default=None)
        or settings.pop("record_mode", None)
        or "none"
    )
    settings.pop("record_mode", None)
    if mode not in RECORD_MODES:
        raise pytest.UsageError(f"record_mode must be one of {', '.join(RECORD_MODES)}: {mode!r}")
    allowed_hosts = settings.pop("allowed_hosts", ())
    nodeid = request.node.nodeid
    path = _cassette_path(markers, vcr_cassette_dir, default_cassette_name, nodeid)
    if mode == "none" and not path.is_file():
        pytest.fail(_how_to_record(nodeid, path), pytrace=False)
    stack = ExitStack()
    cassette = stack.enter_context(
        use_cassette(path, mode, config=settings, allowed_hosts=allowed_hosts)
    )
    try:
        yield cassette
    finally:
        if request.node.stash.get(_FAILED, False):
            failure = CassetteDiscarded(f"{nodeid} failed; its cassette is left as it was")
            stack.__exit__(CassetteDiscarded, failure, None)
        else:
            stack.close()


@pytest.fixture(autouse=True)
def _cortex_vcr_marker(request: pytest.FixtureRequest) -> None:
    """Put every test marked ``vcr`` inside its cassette."""
    if request.node.get_closest_marker("vcr") is not None:
        request.getfixturevalue("vcr")
