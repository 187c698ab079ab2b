"""cortex_agents.testing: record real HTTP through ChatOpenAI, replay it with the network blocked."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from langchain_openai import ChatOpenAI
from vcr.errors import CannotOverwriteExistingCassetteException

from cortex_agents.testing import (
    MATCH_ON,
    NetworkBlocked,
    cassette_config,
    network_blocked,
    record,
    replay,
)


class _Chat(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        reply = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"echo: {prompt}"},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def model(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(
        model="m", base_url=base_url, api_key="sk-secret-123", temperature=0, max_retries=0
    )


def test_record_then_replay_offline(server, tmp_path):
    cassette = tmp_path / "chat.yaml"
    with record(cassette):
        assert model(server).invoke("hello").content == "echo: hello"
    stored = cassette.read_text()
    assert "sk-secret-123" not in stored and "authorization" not in stored.lower()
    assert len(yaml.safe_load(stored)["interactions"]) == 1
    with replay(cassette) as played:  # the server is still up: replay must not touch it
        assert model(server).invoke("hello").content == "echo: hello"
        assert played.play_count == 1


def test_a_failed_recording_leaves_the_old_cassette_as_it_was(server, tmp_path):
    cassette = tmp_path / "chat.yaml"
    with record(cassette):
        model(server).invoke("hello")
    before = cassette.read_bytes()

    def failing_recording() -> None:
        with record(cassette):
            model(server).invoke("something else")
            raise RuntimeError("the test failed")

    with pytest.raises(RuntimeError, match="the test failed"):
        failing_recording()
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.yaml"]
    with record(cassette):  # a successful recording replaces it
        model(server).invoke("something else")
    assert "something else" in cassette.read_text()


def test_a_changed_prompt_is_an_error_not_a_stale_answer(server, tmp_path):
    cassette = tmp_path / "chat.yaml"
    with record(cassette):
        model(server).invoke("hello")
    with replay(cassette), pytest.raises(CannotOverwriteExistingCassetteException):
        model(server).invoke("hello, world")


def test_the_network_is_blocked_during_replay(server, tmp_path):
    import urllib.request

    cassette = tmp_path / "chat.yaml"
    with record(cassette):
        model(server).invoke("hello")
    # an unrecorded request never reaches the (running) server
    with (
        replay(cassette),
        pytest.raises((NetworkBlocked, CannotOverwriteExistingCassetteException)),
    ):
        urllib.request.urlopen(server.replace("/v1", "/"), timeout=2)
    with network_blocked(), pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


def test_tiktoken_loads_offline_from_an_empty_cache(tmp_path):
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('offline')\n"
        "socket.socket.connect = refuse\n"
        "from cortex_agents.tools._tokens import count_tokens\n"
        "print(count_tokens('memory is a graph query'), count_tokens('x', 'cl100k_base'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "1"]
    assert len(list(tmp_path.iterdir())) == 2  # both encodings were seeded into the cache


def test_cassette_config_overrides_add_to_the_filtered_headers_never_replace_them():
    default = cassette_config()
    assert default["match_on"] == MATCH_ON and "body" in default["match_on"]
    config = cassette_config(
        {"filter_headers": ["X-Trace", ("Authorization", "redacted")], "match_on": ["method"]}
    )
    names = [h[0] if isinstance(h, tuple) else h for h in config["filter_headers"]]
    assert names[: len(default["filter_headers"])] == default["filter_headers"]
    assert "X-Trace" in names and names.count("authorization") == 1
    assert "Authorization" not in names  # the default already filters it, whatever the case
    assert config["match_on"] == ["method"]
    assert cassette_config() == default  # nothing shared between calls


def test_allowed_hosts_stay_reachable_while_the_network_is_blocked(server):
    port = int(server.split(":")[2].split("/")[0])
    with network_blocked(allowed_hosts=["localhost"]):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with network_blocked(allowed_hosts=["192.0.2.1"]), pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", port), timeout=2)
