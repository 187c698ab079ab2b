"""The review eval (tools/eval_reviews.py): its replay recomputes the recorded table exactly."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cortex_agents._demo import RecordedModel
from cortex_agents.evaluation._review_arms import ARMS
from cortex_agents.evaluation._review_runs import (
    StaleCassette,
    cassette_path,
    load_recorded,
    record_split,
    replay_split,
)
from cortex_agents.evaluation._reviews import build_review_cases
from tests.support.chat_server import serve_chat

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "cassettes" / "reviews"
sys.path.insert(0, str(ROOT / "tools"))

import eval_reviews  # noqa: E402


@pytest.mark.parametrize("split", ["heldout", "dev"])
def test_the_replay_of_a_split_equals_its_recorded_table(
    split: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = load_recorded(FOLDER, split)["table"]
    assert eval_reviews.main(["--split", split, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == {k: recorded[k] for k in ("cases", "split", "model", "arms")}
    assert printed["cases"] == len(build_review_cases(split))  # every case of the split
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


@contextmanager
def _refusing_server() -> Iterator[str]:
    """A server that answers every request offering tools with llama-server's HTTP 500 for a
    tool call the model left unclosed, and any other with a sound review."""

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("tools"):
                status, reply = 500, {"error": {"code": 500, "message": "Failed to parse tool"}}
            else:
                status, reply = (
                    200,
                    {
                        "id": "r",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": '{"gaps": []}'},
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_reviewer_the_server_refused_is_recorded_and_replayed_as_a_miss(tmp_path: Path) -> None:
    cases = [c for c in build_review_cases("dev") if c.flawed][:2]
    with _refusing_server() as url:
        settings = RecordedModel(base_url=url, model="scripted", max_tokens=64)
        table = record_split(tmp_path, "dev", cases, settings)
    assert replay_split(tmp_path, "dev", cases)[0] == table  # the 500s replay offline
    for arm in ("topological", "seed"):
        scores = table["arms"][arm]
        assert (scores["server_errors"], scores["unparsed"], scores["detected"]) == (2, 2, 0)
    assert table["arms"]["classic"]["server_errors"] == 0


@pytest.mark.parametrize("page", ["README.md", "docs/quality/reviews.md"])
def test_the_pages_carry_the_recorded_heldout_table(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    recorded = load_recorded(FOLDER, "heldout")["table"]
    assert recorded["model"] in text
    for arm, s in recorded["arms"].items():
        low, high = s["detection_ci95"]
        detection = f"{s['detection']:.2f} ({low:.2f}–{high:.2f})"
        low, high = s["false_alarm_ci95"]
        false_alarm = f"{s['false_alarm']:.2f} ({low:.2f}–{high:.2f})"
        row = rf"^\| {arm}\b[^|\n]*\| {re.escape(detection)} \| {re.escape(false_alarm)} \|"
        assert re.search(row, text, re.MULTILINE), (page, arm, detection, false_alarm)
