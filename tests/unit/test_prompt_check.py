"""tools/prompt_check.py finds a tool result that a chat template left out of the prompt.

Two renderers stand for the two templates met here: ChatML with a ``tool``
turn that carries its content (Qwen2.5's own template does this), and the
``chatml-function-calling`` form of llama-cpp-python, which opens a ``tool``
turn and writes nothing into it.
"""

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

TOOL = Path(__file__).parents[2] / "tools" / "prompt_check.py"


@pytest.fixture(scope="module")
def check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prompt_check", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chatml(body) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m.get('content') or ''}<|im_end|>\n" for m in body["messages"])


def drops_tool_turns(body) -> str:
    return "".join(
        f"<|im_start|>{m['role']}\n{'' if m['role'] == 'tool' else m.get('content') or ''}"
        for m in body["messages"]
    )


BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "review"},
        {"role": "user", "content": "inputs"},
        {"role": "assistant", "content": " ", "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"matches": [{"id": "analyst-b"}]}'},
    ],
}


def test_a_template_that_renders_tool_results_passes(check):
    assert check.missing_results([BODY], chatml) == (1, [])


def test_a_template_that_drops_tool_results_is_named(check):
    checked, problems = check.missing_results([{"messages": []}, BODY], drops_tool_turns)
    assert checked == 1
    assert len(problems) == 1 and problems[0].startswith("request 2: tool result 1 (")


def test_requests_without_tool_results_are_not_rendered(check):
    def never(body):
        raise AssertionError("rendered a request without tool results")

    assert check.missing_results([{"messages": [{"role": "user", "content": "x"}]}], never) == (0, [])


def test_content_parts_are_joined(check):
    body = {"messages": [{"role": "tool", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
    assert check.tool_results(body) == ["ab"]


def test_a_cassettes_chat_requests_are_read_and_checked(check, tmp_path):
    cassette = tmp_path / "c.yaml"
    interactions = [
        {"request": {"method": "POST", "uri": "http://h/v1/chat/completions", "body": json.dumps(BODY)}},
        {"request": {"method": "POST", "uri": "http://h/v1/embeddings", "body": "{}"}},
    ]
    cassette.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    assert check.cassette_bodies(cassette) == [BODY]
    checked, problems = check.check_cassettes([cassette], drops_tool_turns)
    assert checked == 1 and problems[0].startswith("c.yaml: request 1")
