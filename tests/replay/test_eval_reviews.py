"""The review eval (tools/eval_reviews.py): its replay recomputes the recorded table exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cortex_agents.demo import RecordedModel
from cortex_agents.evaluation.review_arms import ARMS
from cortex_agents.evaluation.review_runs import (
    StaleCassette,
    cassette_path,
    load_recorded,
    record_split,
    replay_split,
)
from cortex_agents.evaluation.reviews import build_review_cases
from tests.chat_server import serve_chat

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "cassettes" / "reviews"
sys.path.insert(0, str(ROOT / "tools"))

import eval_reviews  # noqa: E402


def test_the_heldout_replay_equals_its_recorded_table(capsys: pytest.CaptureFixture[str]) -> None:
    recorded = load_recorded(FOLDER, "heldout")["table"]
    assert eval_reviews.main(["--split", "heldout", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == {k: recorded[k] for k in ("cases", "split", "model", "arms")}
    assert printed["cases"] == len(build_review_cases("heldout"))
    assert set(printed["arms"]) == set(ARMS)
    # the topological reviewers called the memory tool; the classic and oracle ones could not
    arms = printed["arms"]
    assert arms["classic"]["tool_calls"] == arms["oracle"]["tool_calls"] == 0
    assert arms["topological"]["tool_calls"] >= printed["cases"]
    assert all(a["prompt_tokens"] > 0 and a["completion_tokens"] > 0 for a in arms.values())


def _answer(body: dict, hit: int) -> str:
    """A reviewer that flags c2 whenever it can see the analysts' findings."""
    seen = json.dumps(body["messages"])
    if "annual report" in seen:
        return '{"verdict": "gap", "gaps": ["c2: no source"], "notes": "", "cited": []}'
    return '{"verdict": "sound", "gaps": [], "notes": "", "cited": []}'


def test_record_then_replay_reproduces_the_table(tmp_path: Path) -> None:
    cases = build_review_cases("dev")[:3]
    with serve_chat(_answer) as server:
        settings = RecordedModel(base_url=server.url, model="scripted", max_tokens=64)
        checked: list[Path] = []
        table = record_split(tmp_path, "dev", cases, settings, check=checked.append)
    assert len(checked) == len(cases) * len(ARMS)
    assert load_recorded(tmp_path, "dev")["table"] == table
    replayed, _ = replay_split(tmp_path, "dev", cases)  # the server is gone: replayed offline
    assert replayed == table
    flags_c2 = [c for c in cases if c.flawed == "analyst-b"]
    assert table["arms"]["oracle"]["detected"] == len(flags_c2)
    assert table["arms"]["classic"]["detected"] == 0
    assert table["arms"]["classic"]["prompt_tokens"] == len(cases)  # the server's usage: 1 each


def test_a_cassette_that_no_longer_matches_names_the_command_that_rerecords(
    tmp_path: Path,
) -> None:
    cases = build_review_cases("dev")[:1]
    with serve_chat(_answer) as server:
        settings = RecordedModel(base_url=server.url, model="scripted", max_tokens=64)
        record_split(tmp_path, "dev", cases, settings)
    path = cassette_path(tmp_path, "dev", cases[0].id, "classic")
    text = path.read_text()
    assert "claim review" in text
    path.write_text(text.replace("claim review", "claim rating"))
    with pytest.raises(StaleCassette, match=r"eval_reviews\.py --record --split dev"):
        replay_split(tmp_path, "dev", cases)
    path.unlink()
    with pytest.raises(StaleCassette, match="no cassette"):
        replay_split(tmp_path, "dev", cases)
