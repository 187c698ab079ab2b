"""pytest plugin: the ``llm_cassette`` fixture and the ``--record-cassettes`` option.

Enable it in a ``conftest.py`` with
``pytest_plugins = ["cortex_agents.testing.pytest_plugin"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from cortex_agents.testing import record, replay


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--record-cassettes``: talk to the live endpoint and rewrite cassettes."""
    parser.addoption(
        "--record-cassettes",
        action="store_true",
        default=False,
        help="record LLM exchanges from the live endpoint instead of replaying cassettes",
    )


@pytest.fixture
def llm_cassette(request: pytest.FixtureRequest) -> Callable[[str | Path], AbstractContextManager]:
    """``llm_cassette(path)``: replay (network blocked), or record with ``--record-cassettes``.

    Relative paths are resolved against the test file's folder.
    """
    recording = request.config.getoption("--record-cassettes")
    base = Path(request.node.path).parent

    def use(path: str | Path) -> AbstractContextManager:
        target = Path(path) if Path(path).is_absolute() else base / path
        return record(target) if recording else replay(target)

    return use
