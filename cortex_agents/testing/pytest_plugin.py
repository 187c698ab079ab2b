"""The cortex-agents pytest plugin, registered by entry point when the package is installed.

It gives tests cassettes in pytest-recording's conventions
(:mod:`~cortex_agents.testing._vcr_marker`): the ``@pytest.mark.vcr`` marker
(registered here, so ``--strict-markers`` accepts it), the ``--record-mode``
option (``none`` by default: replay with the network blocked) and the
``vcr_config``, ``vcr_cassette_dir``, ``default_cassette_name`` and ``vcr``
fixtures. Also the explicit form, ``llm_cassette(path)``, a context manager
for any block of a test, and ``--record-cassettes`` (the same as
``--record-mode=all`` for it).

When pytest-recording is installed too, both would claim ``--record-mode``
and the marker, and two plugins cannot share an option. This plugin then
defers: pytest-recording owns the marker, the option and the ``vcr_config``
fixture (return :func:`~cortex_agents.testing.cassette_config` from it to
keep cortex's defaults), ``llm_cassette`` follows its ``--record-mode``, and
the run's header says so. ``-p no:recording`` gives the marker back to this
plugin. The decision is made when options are registered: pytest-recording
counts as present when it is already loaded, or when its entry point is
installed, not blocked with ``-p no:recording`` and plugin autoloading is on.

Importing this module imports neither vcrpy nor LangChain; they load when a
test uses a cassette.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Final

import pytest

__all__ = [
    "DEFERRED_HEADER",
    "RECORD_MODES",
    "llm_cassette",
    "recording_plugin_active",
]

RECORD_MODES: Final = ("none", "once", "new_episodes", "all", "rewrite")
"""The ``--record-mode`` values (pytest-recording's; ``rewrite`` is ``all`` here)."""

_RECORDING_NAMES: Final = ("recording", "pytest_recording.plugin")
_VCR_PLUGIN: Final = "cortex_agents.testing._vcr_marker"

DEFERRED_HEADER: Final = (
    "cortex-agents: pytest-recording is installed, so it handles @pytest.mark.vcr, "
    "--record-mode and vcr_config; return cortex_agents.testing.cassette_config() from "
    "vcr_config to keep cortex's defaults (auth headers filtered, bodies matched), or run "
    "with -p no:recording to use cortex's marker"
)


def _autoload_enabled(pluginmanager: pytest.PytestPluginManager) -> bool:
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    config = pluginmanager.get_plugin("pytestconfig")
    namespace = getattr(config, "known_args_namespace", None)
    return not getattr(namespace, "disable_plugin_autoload", False)


def recording_plugin_active(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording is (or is about to be) loaded in this run."""
    if any(pluginmanager.has_plugin(name) for name in _RECORDING_NAMES):
        return True
    if pluginmanager.is_blocked("recording") or not _autoload_enabled(pluginmanager):
        return False
    return any(
        point.name == "recording" and point.value.startswith("pytest_recording")
        for point in entry_points(group="pytest11")
    )


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """``--record-mode`` (unless pytest-recording owns it) and ``--record-cassettes``."""
    group = parser.getgroup("cortex-cassettes", "cortex-agents cassettes (LLM HTTP record/replay)")
    group.addoption(
        "--record-cassettes",
        action="store_true",
        default=False,
        help="llm_cassette records from the live endpoint, rewriting its cassettes "
        "(the same as --record-mode=all)",
    )
    if recording_plugin_active(pluginmanager):
        return
    group.addoption(
        "--record-mode",
        action="store",
        default=None,
        choices=RECORD_MODES,
        help="cassette record mode: none (default: replay, network blocked), once, "
        "new_episodes, all/rewrite (re-record from scratch); overrides the marker and vcr_config",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``vcr`` marker and fixtures, unless pytest-recording provides them."""
    if any(config.pluginmanager.has_plugin(name) for name in _RECORDING_NAMES):
        return
    config.addinivalue_line(
        "markers",
        "vcr(path=None, **vcr_config): replay (or, with --record-mode, record) this test's "
        "LLM HTTP exchanges from cassettes/<module>/<test>.yaml or `path` (cortex-agents)",
    )
    if not config.pluginmanager.has_plugin(_VCR_PLUGIN):
        config.pluginmanager.import_plugin(_VCR_PLUGIN)


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say which plugin handles ``@pytest.mark.vcr`` when both are installed."""
    if any(config.pluginmanager.has_plugin(name) for name in _RECORDING_NAMES):
        return DEFERRED_HEADER
    return None


def _record_mode(config: pytest.Config) -> str:
    if config.getoption("--record-cassettes"):
        return "all"
    return config.getoption("--record-mode", default=None) or "none"


@pytest.fixture
def llm_cassette(
    request: pytest.FixtureRequest,
) -> Callable[[str | Path], AbstractContextManager[Any]]:
    """``with llm_cassette(path):`` replays (network blocked) or records per ``--record-mode``.

    Relative paths are resolved against the test file's folder.
    ``--record-cassettes`` is ``--record-mode=all``.
    """
    from cortex_agents.testing._cassettes import use_cassette

    mode = _record_mode(request.config)
    base = Path(request.node.path).parent

    def use(path: str | Path, **config: Any) -> AbstractContextManager[Any]:
        target = Path(path) if Path(path).is_absolute() else base / path
        allowed_hosts = config.pop("allowed_hosts", ())
        return use_cassette(target, mode, config=config, allowed_hosts=allowed_hosts)

    return use
