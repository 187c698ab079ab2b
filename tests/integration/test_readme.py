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


def agent_recipe() -> str:
    """The code block of "Add graph memory to an existing agent"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Add graph memory to an existing agent", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    return block


def test_the_agent_recipe_runs_verbatim_through_langchains_create_agent(monkeypatch):
    from langchain_core.messages import AIMessage, ToolMessage

    from cortex_agents.substrate import ToolCallMade
    from tests.chat import ScriptedChatModel, say

    block = agent_recipe()
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
    monkeypatch.chdir(README.parent)
    scope = {"__name__": "readme", "model": model}
    exec(compile(block, str(README), "exec"), scope)
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
