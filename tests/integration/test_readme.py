"""The README's Python examples run, and its quickstart matches CI."""

import re
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"


def python_blocks() -> list[str]:
    """Every ```python block (```py marks fragments that are not meant to run alone)."""
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_examples_run(capsys):
    blocks = python_blocks()
    assert blocks, "the README shows Python usage"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert "analyst-b" in capsys.readouterr().out


def test_quickstart_has_exactly_two_commands_and_ci_runs_the_second():
    text = README.read_text(encoding="utf-8")
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quickstart, flags=re.S)
    assert len(commands) == 2
    marked = re.search(
        r"<!-- test-command -->\n```bash\n(.*?)\n```\n<!-- /test-command -->", text, flags=re.S
    )
    assert marked and marked.group(1) == commands[1]
    assert "pytest" in commands[1] and "cortex-agents" in commands[0]
