"""The pytest plugin, run through pytester against a local OpenAI-shaped HTTP server.

Each test writes a small test file that calls the real ``ChatOpenAI`` client,
runs pytest on it in-process with the plugin registered by its entry point,
and checks what reached the server (its hit count) and what the cassette
holds on disk. Inner runs pass ``-p no:recording`` (pytest-recording is
installed in the dev environment) except where the hand-over to
pytest-recording is the point, and switch off the plugins they do not need
(:data:`QUIET`: pytest-asyncio's configure-time warning would be an error
under this suite's ``filterwarnings``, and the others only cost time).
"""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cortex_agents.testing.pytest_plugin import DEFERRED_HEADER
from tests.support.chat_server import ChatServer, serve_chat

pytest_plugins = ["pytester"]

QUIET = (
    "-p",
    "no:asyncio",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:langsmith_plugin",
    "-p",
    "no:anyio",
)
OURS = ("-p", "no:recording", *QUIET)
SECRET = "sk-secret-123"


@pytest.fixture
def server(monkeypatch) -> Iterator[ChatServer]:
    with serve_chat() as state:
        monkeypatch.setenv("CHAT_URL", state.url)
        yield state


CHAT = f'''
import os

import pytest
from langchain_openai import ChatOpenAI


def chat(**kwargs):
    return ChatOpenAI(
        model="m", base_url=os.environ["CHAT_URL"], api_key="{SECRET}",
        temperature=0, max_retries=0, **kwargs,
    )
'''


def write_tests(pytester: pytest.Pytester, body: str, name: str = "test_chat") -> Path:
    return pytester.makepyfile(**{name: CHAT + body})


def cassette(pytester: pytest.Pytester, name: str, module: str = "test_chat") -> Path:
    return pytester.path / "cassettes" / module / f"{name}.yaml"


HELLO = """
@pytest.mark.vcr
def test_hello():
    assert chat().invoke("hello").content == "echo: hello"
"""


def test_record_once_then_replay_with_the_network_blocked(pytester, server):
    write_tests(pytester, HELLO)
    pytester.runpytest(*OURS, "--strict-markers", "--record-mode=once").assert_outcomes(passed=1)
    assert server.hits == 1
    stored = cassette(pytester, "test_hello").read_text()
    assert SECRET not in stored and "authorization" not in stored.lower()
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"  # it was sent, not stored
    [interaction] = yaml.safe_load(stored)["interactions"]
    assert json.loads(interaction["request"]["body"])["messages"][-1]["content"] == "hello"

    pytester.runpytest(*OURS, "--strict-markers").assert_outcomes(passed=1)  # default: none
    assert server.hits == 1  # replayed, though the server is up


def test_a_missing_cassette_fails_with_the_command_that_records_it(pytester, server):
    write_tests(pytester, HELLO)
    result = pytester.runpytest(*OURS)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*no cassette at {cassette(pytester, 'test_hello')}*--record-mode=once*"]
    )
    assert server.hits == 0


def test_a_changed_prompt_is_an_error_under_replay(pytester, server):
    write_tests(pytester, HELLO)
    pytester.runpytest(*OURS, "--record-mode=once").assert_outcomes(passed=1)
    write_tests(
        pytester, HELLO.replace('"hello"', '"hello, world"').replace("o: hello", "o: hello, world")
    )
    result = pytester.runpytest(*OURS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CannotOverwriteExistingCassetteException*"])
    assert server.hits == 1


def test_under_none_the_network_is_blocked_except_for_allowed_hosts(pytester, server):
    port = server.url.split(":")[2].split("/")[0]
    write_tests(
        pytester,
        f"""
import socket
from cortex_agents.testing import NetworkBlocked


@pytest.mark.vcr
def test_blocked():
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", {port}), timeout=2)


@pytest.mark.vcr(allowed_hosts=["localhost"])
def test_allowed():
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
""",
    )
    for name in ("test_blocked", "test_allowed"):
        path = cassette(pytester, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("interactions: []\nversion: 1\n")
    pytester.runpytest(*OURS).assert_outcomes(passed=2)


def test_vcr_config_is_laid_over_the_defaults_and_keeps_auth_filtered(pytester, server):
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def vcr_config():
    return {"filter_headers": ["x-trace"], "match_on": ["method", "path"]}
"""
    )
    body = """
@pytest.mark.vcr
def test_traced():
    reply = chat(default_headers={"x-trace": "trace-42"}).invoke("PROMPT")
    assert reply.content == "echo: hello"
"""
    write_tests(pytester, body.replace("PROMPT", "hello"))
    pytester.runpytest(*OURS, "--record-mode=once").assert_outcomes(passed=1)
    stored = cassette(pytester, "test_traced").read_text()
    assert "trace-42" not in stored and SECRET not in stored
    assert server.headers[0]["x-trace"] == "trace-42"
    # The body is no longer matched, so another prompt replays the same answer.
    write_tests(pytester, body.replace("PROMPT", "something else"))
    pytester.runpytest(*OURS).assert_outcomes(passed=1)
    assert server.hits == 1


def test_an_explicit_cassette_path_and_the_markers_record_mode(pytester, server):
    write_tests(
        pytester,
        """
@pytest.mark.vcr("shared/chat.yaml", record_mode="once")
def test_shared():
    assert chat().invoke("hello").content == "echo: hello"
""",
    )
    pytester.runpytest(*OURS).assert_outcomes(passed=1)  # the marker's `once` records
    path = pytester.path / "cassettes" / "test_chat" / "shared" / "chat.yaml"
    assert path.is_file() and not cassette(pytester, "test_shared").exists()
    path.unlink()
    result = pytester.runpytest(*OURS, "--record-mode=none")  # the command line wins
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no cassette at*shared/chat.yaml*"])
    assert server.hits == 1


TWO = """
@pytest.mark.vcr
def test_one():
    assert chat().invoke("one").content == "echo: one"


@pytest.mark.vcr
def test_two():
    assert chat().invoke("two").content == "echo: two"
"""


def test_re_recording_one_test_rewrites_its_cassette_only(pytester, server):
    write_tests(pytester, TWO)
    pytester.runpytest(*OURS, "--record-mode=once").assert_outcomes(passed=2)
    one, two = cassette(pytester, "test_one"), cassette(pytester, "test_two")
    before_one, before_two = one.read_bytes(), two.read_bytes()
    assert b"reply-1" in before_one + before_two and server.hits == 2

    pytester.runpytest(*OURS, "-k", "test_one", "--record-mode=all").assert_outcomes(passed=1)
    assert server.hits == 3
    assert one.read_bytes() != before_one and b"reply-3" in one.read_bytes()
    assert two.read_bytes() == before_two
    pytester.runpytest(*OURS).assert_outcomes(passed=2)
    assert server.hits == 3


def test_a_failing_test_leaves_its_cassette_as_it_was(pytester, server):
    write_tests(pytester, HELLO)
    pytester.runpytest(*OURS, "--record-mode=once").assert_outcomes(passed=1)
    path = cassette(pytester, "test_hello")
    before = path.read_bytes()
    write_tests(pytester, HELLO + "    assert False, 'the test broke'\n")
    for mode in ("all", "rewrite", "new_episodes"):
        pytester.runpytest(*OURS, f"--record-mode={mode}").assert_outcomes(failed=1)
        assert path.read_bytes() == before, mode
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_hello.yaml"]
    assert server.hits == 3  # `all` and `rewrite` asked again; `new_episodes` replayed the match


LLM_CASSETTE = """
def test_block(llm_cassette):
    with llm_cassette("recorded/chat.yaml"):
        assert chat().invoke("hello").content == "echo: hello"
"""


def test_llm_cassette_follows_record_mode_and_record_cassettes(pytester, server):
    write_tests(pytester, LLM_CASSETTE)
    path = pytester.path / "recorded" / "chat.yaml"
    pytester.runpytest(*OURS).assert_outcomes(failed=1)  # none: nothing recorded yet
    pytester.runpytest(*OURS, "--record-mode=once").assert_outcomes(passed=1)
    assert server.hits == 1 and b"reply-1" in path.read_bytes()
    pytester.runpytest(*OURS, "--record-cassettes").assert_outcomes(passed=1)
    assert server.hits == 2 and b"reply-2" in path.read_bytes()
    pytester.runpytest(*OURS).assert_outcomes(passed=1)
    assert server.hits == 2


def test_a_conftest_naming_the_plugin_does_not_register_it_twice(pytester, server):
    pytester.makeconftest('pytest_plugins = ["cortex_agents.testing.pytest_plugin"]\n')
    write_tests(pytester, LLM_CASSETTE + HELLO)
    pytester.runpytest(*OURS, "--strict-markers", "--record-mode=once").assert_outcomes(passed=2)
    assert server.hits == 2


def test_with_pytest_recording_installed_it_owns_the_marker_and_the_option(pytester, server):
    pytester.makeconftest(
        """
import pytest
from cortex_agents.testing import cassette_config

@pytest.fixture
def vcr_config():
    return cassette_config()
"""
    )
    write_tests(pytester, HELLO + LLM_CASSETTE)
    args = (*QUIET, "--strict-markers")
    # pytest-recording is loaded (its --block-network option exists) and no option clashed.
    assert "--block-network" in pytester.runpytest(*args, "--help").stdout.str()
    result = pytester.runpytest(*args, "--record-mode=once")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([DEFERRED_HEADER])
    assert server.hits == 2
    stored = cassette(pytester, "test_hello").read_text()  # the same place by convention
    assert SECRET not in stored and "authorization" not in stored.lower()
    assert (pytester.path / "recorded" / "chat.yaml").is_file()  # llm_cassette saw its option
    pytester.runpytest(*args).assert_outcomes(passed=2)
    assert server.hits == 2
    # Without pytest-recording, the header is not shown and the marker is cortex's.
    result = pytester.runpytest(*OURS)
    result.assert_outcomes(passed=2)
    assert DEFERRED_HEADER not in result.stdout.str()
