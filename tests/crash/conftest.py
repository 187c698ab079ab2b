"""Print what the crash tests measured (kills, re-executions) in the terminal summary."""

from __future__ import annotations

import pytest

REPORT: list[str] = []


@pytest.fixture
def crash_report() -> list[str]:
    """Lines to show at the end of the test session."""
    return REPORT


def pytest_terminal_summary(terminalreporter) -> None:
    if REPORT:
        terminalreporter.section("crash tests")
        for line in REPORT:
            terminalreporter.write_line(line)
