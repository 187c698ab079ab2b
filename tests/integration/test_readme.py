"""The README's and the docs' Python examples run, and the README's quickstart matches CI.

Every ```python block of README.md and of each page under docs/ is executed
(```py marks fragments that are not meant to run alone: the agent recipe is
run below with a scripted model). Each page's blocks run in order in one
namespace, as a reader would paste them, in a fresh working directory.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    """Every ```python block of the page, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_python_examples_run(page, tmp_path, monkeypatch, capsys):
    blocks = python_blocks(page)
    monkeypatch.chdir(tmp_path)  # an example that writes a database writes it here
    scope = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(page), "exec"), scope)
    if page == DOCS / "guide" / "memory.md":
        assert "analyst-b" in capsys.readouterr().out  # the ranking it prints


def test_the_docs_show_python_that_runs():
    with_code = [p.relative_to(ROOT).as_posix() for p in PAGES if python_blocks(p)]
    # the pages whose examples are the guide's backbone
    assert {
        "docs/index.md",
        "docs/guide/wires.md",
        "docs/guide/memory.md",
        "docs/guide/persistence.md",
        "docs/guide/server.md",
        "docs/guide/scratch-memory.md",
        "docs/guide/rewrites.md",
    } <= set(with_code)


def test_every_docs_page_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert {page for page in pages if f": {page}" not in nav} == set()


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


def test_the_readme_stays_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def agent_recipe(page: Path, heading: str) -> str:
    """The code block of the agent recipe's section of ``page``."""
    text = page.read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    return block


RECIPES = [
    (README, "## Add graph memory to an existing agent"),
    (DOCS / "guide" / "agents.md", "# Graph memory in an existing agent"),
]


@pytest.mark.parametrize(("page", "heading"), RECIPES, ids=["README", "docs"])
def test_the_agent_recipe_runs_verbatim_through_langchains_create_agent(monkeypatch, page, heading):
    from langchain_core.messages import AIMessage, ToolMessage

    from cortex_agents.substrate import ToolCallMade
    from tests.support.chat import ScriptedChatModel, say

    block = agent_recipe(page, heading)
    assert len([line for line in block.splitlines() if line.strip()]) <= 10
    asked = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "cortex_memory_query",
                "args": {"query_text": "selection bias", "limit": 3},
                "id": "call-1",
                "type": "tool_call",
            }
        ],
    )
    model = ScriptedChatModel(script={"": [asked, say("analyst-b found selection bias")]})
    monkeypatch.chdir(ROOT)
    scope = {"__name__": "readme", "model": model}
    exec(compile(block, str(page), "exec"), scope)
    out = scope["out"]
    (reply,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert reply.status == "success" and reply.artifact["query"]["limit"] == 3
    assert out["messages"][-1].content == "analyst-b found selection bias"
    (made,) = [e for e in out["substrate"] if isinstance(e, ToolCallMade)]
    assert made.node_id == "agent" and made.result["total"] > 0
    # the model was offered the tool's schema, without injected or developer-only arguments
    offered = model.requests[0]["tools"][0]["function"]
    assert offered["name"] == "cortex_memory_query"
    assert "runtime" not in offered["parameters"]["properties"]
    assert "scope" not in offered["parameters"]["properties"]
