"""tools/record_cassettes.py re-records one scenario at a time and never loses a good cassette.

The shipped cassettes are copied to a temporary folder and the tool records
against a local OpenAI-compatible server (a fixed short answer to every
request), so the real runtime, the real ``ChatOpenAI`` client and vcrpy run
end to end without the external network.
"""

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from cortex_agents._bundled import bundled_path
from cortex_agents._demo import SCENARIOS
from tests.support.chat_server import serve_chat

TOOL = Path(__file__).parents[2] / "tools" / "record_cassettes.py"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_cassettes", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def out(tmp_path) -> Path:
    folder = tmp_path / "cassettes"
    shutil.copytree(bundled_path("cassettes"), folder)
    return folder


def instance(schema: dict, index: int = 0):
    """The smallest value of ``schema`` (enums cycle with ``index``, so list items differ)."""
    if "enum" in schema:
        return schema["enum"][index % len(schema["enum"])]
    if schema.get("type") == "object":
        return {k: instance(v, index) for k, v in schema.get("properties", {}).items()}
    if schema.get("type") == "array":
        return [instance(schema["items"], i) for i in range(schema.get("minItems", 0))]
    return "short"


def in_the_format(body: dict, hit: int) -> str:
    """A model that answers every answer turn in the schema asked for, and never calls a tool."""
    if "response_format" in body:
        form = body["response_format"]
        # json_schema (the default) nests the schema; json_object carries it beside the type
        schema = form["json_schema"]["schema"] if "json_schema" in form else form["schema"]
        return json.dumps(instance(schema))
    return "A short answer."


def contents(folder: Path) -> dict[str, bytes]:
    # every file, the review eval's subfolder included (it must not change either)
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def run(tool: ModuleType, url: str, out: Path, *args: str) -> int:
    # json_object carries each bound in the schema, so `instance` can satisfy it
    form = ["--structured-output", "json_object"]
    return tool.main(["--base-url", url, "--model", "m", "--out", str(out), *form, *args])


def test_one_scenario_is_re_recorded_and_no_other_file_changes(tool, out):
    before = contents(out)
    assert {f"{name}{suffix}" for name in SCENARIOS for suffix in (".yaml", ".json")} <= set(before)
    with serve_chat(in_the_format) as server:
        assert run(tool, server.url, out, "--scenario", "claim_review") == 0
    after = contents(out)
    assert set(after) == set(before)  # no staging folder left behind
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {"claim_review.yaml", "claim_review.json"}
    assert server.url.encode() in after["claim_review.yaml"]
    assert server.hits >= 1


def test_a_recording_that_misses_its_point_keeps_the_old_cassette(tool, out, capsys):
    before = contents(out)
    assert SCENARIOS["claim_review_repair"].expect == ("admitted",)
    with serve_chat(in_the_format) as server:  # never proposes a repair
        assert run(tool, server.url, out, "--scenario", "claim_review_repair") == 1
        assert server.hits >= 1
        assert contents(out) == before
        assert "kept the old claim_review_repair.yaml" in capsys.readouterr().err
        assert (
            run(tool, server.url, out, "--scenario", "claim_review_repair", "--keep-mismatched")
            == 0
        )
    after = contents(out)
    assert {n for n in before if after[n] != before[n]} == {
        "claim_review_repair.yaml",
        "claim_review_repair.json",
    }


def test_an_unreachable_endpoint_changes_nothing(tool, out, capsys):
    before = contents(out)
    with serve_chat() as server:
        url = server.url  # the server is gone once the block ends
    assert run(tool, url, out, "--scenario", "claim_review") == 1
    assert contents(out) == before
    assert "recording failed" in capsys.readouterr().err


def test_a_recording_whose_answers_are_not_the_json_asked_for_is_not_kept(tool, out, capsys):
    before = contents(out)
    with serve_chat(lambda body, hit: "A short answer.") as server:  # ignores the format
        assert run(tool, server.url, out, "--scenario", "claim_review", "--attempts", "2") == 1
        assert server.hits >= 2 * 7  # recorded twice, every stage asked each time
    assert contents(out) == before
    err = capsys.readouterr().err
    assert "outputs inferred from text" in err and "kept the old claim_review.yaml" in err
    # what the requests asked for: the form given, on every answer turn
    bodies = [b for b in server.bodies if "response_format" in b]
    assert bodies and all(b["response_format"]["type"] == "json_object" for b in bodies)


def test_a_fixture_is_recorded_into_the_fixtures_folder(tool, out, tmp_path):
    fixtures = tmp_path / "fixtures"
    with serve_chat(in_the_format) as server:  # no malformed call: the fixture misses its point
        code = run(tool, server.url, out, "--scenario", "malformed_tool_call", "--fixtures-out",
                   str(fixtures), "--keep-mismatched")  # fmt: skip
    assert code == 0
    assert sorted(p.name for p in fixtures.iterdir()) == [
        "malformed_tool_call.json",
        "malformed_tool_call.yaml",
    ]
    meta = json.loads((fixtures / "malformed_tool_call.json").read_text())
    assert meta["model"]["max_tokens"] == 24  # the fixture's own cap, recorded for replay
