"""tools/record_cassettes.py re-records one scenario at a time and never loses a good cassette.

The shipped cassettes are copied to a temporary folder and the tool records
against a local OpenAI-compatible server (a fixed short answer to every
request), so the real runtime, the real ``ChatOpenAI`` client and vcrpy run
end to end without the external network.
"""

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from cortex_agents.bundled import bundled_path
from cortex_agents.demo import SCENARIOS
from tests.chat_server import serve_chat

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


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def run(tool: ModuleType, url: str, out: Path, *args: str) -> int:
    return tool.main(["--base-url", url, "--model", "m", "--out", str(out), *args])


def test_one_scenario_is_re_recorded_and_no_other_file_changes(tool, out):
    before = contents(out)
    assert {f"{name}{suffix}" for name in SCENARIOS for suffix in (".yaml", ".json")} <= set(before)
    with serve_chat(lambda body, hit: "A short answer.") as server:
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
    with serve_chat(lambda body, hit: "A short answer.") as server:  # never proposes a repair
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
