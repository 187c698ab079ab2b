"""``cortex-agents inspect --thread``: an empty thread id is a thread id, not "list them all".

The command once chose "list every thread" when ``--thread`` was empty (a
falsy string) and "show one thread" when it was not ``None``, so
``--thread ""`` fell between the two and crashed with a ``TypeError``
traceback (``mypy --strict`` found the mixed ``list | dict`` value).
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cortex_agents.cli import app

EXAMPLE = Path(__file__).parents[2] / "examples" / "claim_review.json"
runner = CliRunner()


def test_an_empty_thread_id_is_an_unknown_thread_with_a_clean_error(tmp_path):
    db = str(tmp_path / "cortex.db")
    assert runner.invoke(app, ["import", str(EXAMPLE), db, "--thread", "a-run"]).exit_code == 0
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["inspect", db, "--thread", "", *extra])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "no thread ''" in result.output
    # the listing and one thread's detail still work
    listing = json.loads(runner.invoke(app, ["inspect", db, "--json"]).stdout)
    assert [t["thread_id"] for t in listing] == ["a-run"]
    detail = json.loads(runner.invoke(app, ["inspect", db, "--thread", "a-run", "--json"]).stdout)
    assert detail["summary"]["nodes"] == 7
