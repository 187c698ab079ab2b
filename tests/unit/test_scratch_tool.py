"""The `memory` tool: schema, each command, errors as tool messages, ToolNode, and fuzzing."""

import json
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime

from cortex_agents.scratch import ScratchBackend
from cortex_agents.scratch._store import MAX_FILE_CHARS
from cortex_agents.tools import MEMORY_TOOL_NAME, make_memory_tool
from cortex_agents.tools._scratch_tool import ARGUMENTS, COMMANDS
from tests.support.scratch import CORPUS, RecordingStore, everything, node_memory, thread_memory

CODES = {
    "invalid_path",
    "not_found",
    "is_a_directory",
    "not_a_directory",
    "invalid_argument",
    "memory_unavailable",
}


@dataclass(frozen=True)
class StageContext:
    """What the runtime's stage context carries; the tool reads `scratch`."""

    scratch: Any


class DictContext(TypedDict):
    """A mapping context, as a graph with a TypedDict `context_schema` passes it."""

    scratch: Any


TOOL = make_memory_tool()


def runtime_for(scratch: Any, *, context: Any = "default") -> ToolRuntime[Any, Any]:
    return ToolRuntime(
        state={},
        context=StageContext(scratch) if context == "default" else context,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=None,
    )


def call(memory: Any, **args: Any) -> ToolMessage:
    result = TOOL.invoke(
        {
            "type": "tool_call",
            "name": MEMORY_TOOL_NAME,
            "args": {**args, "runtime": runtime_for(memory)},
            "id": "call-1",
        }
    )
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call-1"
    return result


def error_of(message: ToolMessage) -> dict:
    assert message.status == "error"
    payload = json.loads(message.content)
    assert set(payload) == {"error"} and set(payload["error"]) == {"code", "message"}
    assert payload["error"]["code"] in CODES
    return payload["error"]


@pytest.fixture
def store():
    return RecordingStore()


@pytest.fixture
def backend(store):
    return ScratchBackend.for_store(store)


@pytest.fixture
def memory(backend):
    memory = thread_memory(backend, "analyst", "t1")
    memory.append("/notes/todo", "check the totals")
    return memory


def test_the_model_sees_one_bounded_schema_without_the_runtime():
    spec = convert_to_openai_tool(TOOL)["function"]
    assert spec["name"] == "memory"
    parameters = spec["parameters"]
    assert set(parameters["properties"]) == {
        "command",
        "path",
        "content",
        "old",
        "new",
        "view_range",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "insert_text",
        "old_path",
        "new_path",
    }
    # `rename` takes old_path/new_path instead of path, so only `command` is required for all.
    assert parameters["required"] == ["command"]
    assert parameters["properties"]["command"]["enum"] == list(COMMANDS)
    for name in ("path", "old_path", "new_path"):
        assert parameters["properties"][name]["anyOf"][0]["maxLength"] == 2048
    for name in ("content", "old", "new", "file_text", "old_str", "new_str", "insert_text"):
        assert parameters["properties"][name]["anyOf"][0]["maxLength"] == MAX_FILE_CHARS
    assert parameters["properties"]["view_range"]["anyOf"][0]["minItems"] == 2
    assert parameters["properties"]["insert_line"]["anyOf"][0]["minimum"] == 0
    assert "runtime" not in json.dumps(parameters)


def test_each_command(memory):
    assert call(memory, command="read", path="/notes/todo").content == "check the totals"
    appended = call(memory, command="append", path="/notes/todo", content="then file")
    assert appended.status == "success"
    assert appended.content == "appended 9 characters to '/notes/todo'; it now holds 26 characters"
    assert call(memory, command="update", path="/notes/todo", old="t", new="T").content == "4"
    assert memory.read("/notes/todo") == "check The ToTals\nThen file"
    listing = call(memory, command="list", path="/").content
    assert listing == "/\n  notes/\n    todo (26 chars)"
    deleted = call(memory, command="delete", path="//notes/")
    assert deleted.content == "deleted '/notes' (1 file)"
    assert memory.is_empty()


def test_update_returns_a_number(memory):
    result = call(memory, command="update", path="/notes/todo", old="zzz", new="y")
    assert json.loads(result.content) == 0


def test_null_arguments_the_command_does_not_use_are_accepted(memory):
    result = call(memory, command="read", path="/notes/todo", content=None, old=None, new=None)
    assert result.content == "check the totals"


@pytest.mark.parametrize(
    ("args", "code", "names"),
    [
        ({"command": "read", "path": "/nope"}, "not_found", "'/nope'"),
        ({"command": "read", "path": "/notes"}, "is_a_directory", "'/notes'"),
        ({"command": "append", "path": "/notes", "content": "x"}, "is_a_directory", "'/notes'"),
        (
            {"command": "append", "path": "/notes/todo/x", "content": "x"},
            "not_a_directory",
            "'/notes/todo'",
        ),
        ({"command": "read", "path": "/a/../b"}, "invalid_path", "`..`"),
        ({"command": "read", "path": "/"}, "invalid_path", "only `list`"),
        ({"command": "delete", "path": "/"}, "invalid_path", "only `list`"),
        ({"command": "append", "path": "/x"}, "invalid_argument", "`content` is required"),
        ({"command": "update", "path": "/x", "old": "a"}, "invalid_argument", "`new` is required"),
        (
            {"command": "read", "path": "/x", "content": "a"},
            "invalid_argument",
            "`content` is not used",
        ),
        (
            {"command": "update", "path": "/notes/todo", "old": "", "new": "x"},
            "invalid_argument",
            "`old`",
        ),
        ({"command": "append", "path": "/x", "content": "a\x00"}, "invalid_argument", "NUL"),
        ({"command": "erase", "path": "/x"}, "invalid_argument", "`command`"),
        ({"path": "/x"}, "invalid_argument", "`command`: Field required"),
        ({"command": "read"}, "invalid_argument", "`path` is required by command 'read'"),
        (
            {"command": "read", "path": 7},
            "invalid_argument",
            "`path`: Input should be a valid string",
        ),
        (
            {"command": "read", "path": "/x", "mode": "rw"},
            "invalid_argument",
            "`mode`: Extra inputs",
        ),
        (
            {"command": "append", "path": "/x", "content": "y" * (MAX_FILE_CHARS + 1)},
            "invalid_argument",
            f"`content`: String should have at most {MAX_FILE_CHARS} characters",
        ),
        ({"command": "read", "path": "/" * 3000}, "invalid_argument", "at most 2048 characters"),
    ],
)
def test_mistakes_come_back_as_tool_errors_and_change_nothing(store, memory, args, code, names):
    before, writes = everything(store), len(store.puts)
    error = error_of(call(memory, **args))
    assert error["code"] == code
    assert names in error["message"]
    assert everything(store) == before and len(store.puts) == writes


@pytest.mark.parametrize(
    "context",
    [None, StageContext(None), StageContext("not a memory"), object()],
    ids=["no context", "scratch None", "scratch wrong type", "no scratch attribute"],
)
def test_a_missing_binding_is_a_tool_error(context):
    result = TOOL.invoke(
        {
            "type": "tool_call",
            "name": "memory",
            "args": {"command": "list", "path": "/", "runtime": runtime_for(None, context=context)},
            "id": "call-1",
        }
    )
    assert error_of(result)["code"] == "memory_unavailable"


@pytest.mark.parametrize("make_context", [dict, DictContext], ids=["dict", "TypedDict"])
def test_a_mapping_context_binds_through_its_scratch_key(memory, make_context):
    result = TOOL.invoke(
        {
            "type": "tool_call",
            "name": "memory",
            "args": {
                "command": "read",
                "path": "/notes/todo",
                "runtime": runtime_for(None, context=make_context(scratch=memory)),
            },
            "id": "call-1",
        }
    )
    assert result.status == "success" and result.content == "check the totals"
    unbound = TOOL.invoke(
        {
            "type": "tool_call",
            "name": "memory",
            "args": {"command": "list", "path": "/", "runtime": runtime_for(None, context={})},
            "id": "call-2",
        }
    )
    assert error_of(unbound)["code"] == "memory_unavailable"


def test_no_runtime_at_all_is_a_tool_error():
    result = TOOL.invoke(
        {"type": "tool_call", "name": "memory", "args": {"command": "list", "path": "/"}, "id": "c"}
    )
    assert error_of(result)["code"] == "memory_unavailable"


@pytest.mark.parametrize(("raw", "rule"), CORPUS, ids=[repr(raw)[:40] for raw, _ in CORPUS])
def test_every_corpus_path_is_a_tool_error_through_every_command(store, memory, raw, rule):
    before, writes = everything(store), len(store.puts)
    for args in (
        {"command": "append", "content": "x"},
        {"command": "update", "old": "c", "new": "d"},
        {"command": "delete"},
        {"command": "read"},
    ):
        error = error_of(call(memory, path=raw, **args))
        if raw == "/\ud800":  # pydantic refuses a lone surrogate before the path rules run
            assert error["code"] == "invalid_argument" and "`path`" in error["message"]
        else:
            assert error["code"] == "invalid_path" and rule in error["message"]
    assert everything(store) == before and len(store.puts) == writes


def graph_with_tool():
    graph = StateGraph(MessagesState, context_schema=StageContext)
    graph.add_node("tools", ToolNode([make_memory_tool()]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def tool_call(call_id: str, **args: Any) -> dict:
    return {"name": "memory", "args": args, "id": call_id, "type": "tool_call"}


def test_under_tool_node_the_runtime_is_injected_and_cannot_be_forged(backend):
    app = graph_with_tool()
    one = thread_memory(backend, "n", "t1")
    two = thread_memory(backend, "n", "t2")
    calls = [
        tool_call("a", command="append", path="/f", content="from t1"),
        tool_call("b", command="append", path="/bad..path", content="x"),
        tool_call("c", command="read", path="/nope", runtime={"context": {"scratch": "forged"}}),
    ]
    out = app.invoke({"messages": [AIMessage("", tool_calls=calls)]}, context=StageContext(one))
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["a"].status == "success"
    assert error_of(results["b"])["code"] == "invalid_path"
    assert error_of(results["c"])["code"] == "not_found"  # ran on the injected memory
    assert one.read("/f") == "from t1" and two.is_empty()

    out = app.invoke(
        {"messages": [AIMessage("", tool_calls=[tool_call("d", command="list", path="/")])]},
        context=StageContext(two),
    )
    assert out["messages"][-1].content == "/ (empty)"


def test_under_tool_node_without_a_binding_the_run_does_not_crash():
    out = graph_with_tool().invoke(
        {"messages": [AIMessage("", tool_calls=[tool_call("a", command="list", path="/")])]},
        context=StageContext(None),
    )
    assert error_of(out["messages"][-1])["code"] == "memory_unavailable"


@pytest.mark.asyncio
async def test_async_invocation(memory):
    result = await TOOL.ainvoke(
        {
            "type": "tool_call",
            "name": "memory",
            "args": {"command": "read", "path": "/notes/todo", "runtime": runtime_for(memory)},
            "id": "call-1",
        }
    )
    assert result.content == "check the totals"


ANY_VALUE = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.integers(),
    st.booleans(),
    st.lists(st.text(max_size=3), max_size=2),
    st.sampled_from(["\ud800", "a\x00b", "y" * (MAX_FILE_CHARS + 1), "", "t"]),
)
TEXT = st.text(max_size=20) | st.sampled_from(
    ["\ud800", "a\x00b", "y" * (MAX_FILE_CHARS + 1), "", "t", "check", "the"]
)
GOOD_PATHS = st.sampled_from(
    ["/notes/todo", "/notes", "/", "/new", "/notes/todo/x", "//notes/", "/memories/notes.md"]
)
PATHS = GOOD_PATHS | GOOD_PATHS | st.sampled_from([raw for raw, _ in CORPUS])
LINES = st.integers(min_value=-2, max_value=4) | ANY_VALUE
RANGES = st.lists(st.integers(min_value=-2, max_value=4), min_size=0, max_size=3) | ANY_VALUE
ARGUMENT_NAMES = sorted({name for pair in ARGUMENTS.values() for group in pair for name in group})


def value_for(draw, name: str) -> Any:
    """A plausible (often wrong) value for argument ``name``."""
    if name in {"path", "old_path", "new_path"}:
        return draw(PATHS)
    if name == "insert_line":
        return draw(LINES)
    if name == "view_range":
        return draw(RANGES)
    return draw(TEXT)


def often(draw, tenths: int) -> bool:
    """True ``tenths`` times out of ten (hypothesis favours small integers, so sample)."""
    return draw(st.sampled_from([True] * tenths + [False] * (10 - tenths)))


@st.composite
def model_args(draw) -> dict:
    """Arguments a model might write: mostly well-formed, with every kind of mistake."""
    args: dict[str, Any] = {}
    if often(draw, 9):
        args["command"] = draw(st.sampled_from(COMMANDS) if often(draw, 8) else ANY_VALUE)
    command = args.get("command")
    required, optional = ARGUMENTS.get(command, ((), ())) if isinstance(command, str) else ((), ())
    for name in ARGUMENT_NAMES:
        if name in required and often(draw, 9):
            args[name] = value_for(draw, name) if often(draw, 8) else draw(ANY_VALUE)
        elif name in optional and often(draw, 5):
            args[name] = value_for(draw, name)
        elif name not in required and not often(draw, 9):
            args[name] = draw(ANY_VALUE)
    if not often(draw, 9):
        args["extra"] = draw(ANY_VALUE)
    return args


@st.composite
def well_formed_args(draw) -> dict:
    """Well-formed calls with drawn paths and texts: every command, every outcome."""
    command = draw(st.sampled_from(COMMANDS))
    required, optional = ARGUMENTS[command]
    args: dict[str, Any] = {"command": command}
    for name in required:
        if name in {"path", "old_path", "new_path"}:
            args[name] = draw(PATHS if often(draw, 3) else GOOD_PATHS)
        elif name == "insert_line":
            args[name] = draw(st.integers(min_value=0, max_value=3))
        else:
            args[name] = draw(TEXT)
    if optional and often(draw, 3):
        args["view_range"] = draw(st.sampled_from([[1, 1], [1, -1], [2, 2], [0, 1]]))
    return args


def check_outcome(args: dict) -> None:
    """Call the tool; a refusal must be a tool error that wrote nothing."""
    store = RecordingStore()
    memory = node_memory(ScratchBackend.for_store(store), "n")
    memory.append("/notes/todo", "check the totals")
    before, writes = everything(store), len(store.puts)
    result = call(memory, **args)  # never raises
    if result.status == "error":
        event(f"error {error_of(result)['code']}")
        assert everything(store) == before and len(store.puts) == writes
        return
    event(f"success {args['command']}")
    assert args.get("command") in COMMANDS
    if args["command"] in {"read", "list", "view"}:
        assert len(store.puts) == writes
    if args["command"] == "append":
        assert memory.read(args["path"]).endswith(args["content"])
    if args["command"] == "create":
        assert memory.read(args["path"]) == args["file_text"]
    if args["command"] == "str_replace":
        assert before[(memory.namespace, "/notes/todo")]["content"].count(args["old_str"]) == 1
    if args["command"] == "rename":
        assert len(everything(store)) == len(before)  # moved, not copied


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_args())
def test_fuzzed_arguments_give_a_result_or_a_tool_error_that_writes_nothing(args):
    check_outcome(args)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(well_formed_args())
def test_fuzzed_well_formed_calls_give_a_result_or_a_tool_error_that_writes_nothing(args):
    check_outcome(args)


def test_a_long_unused_argument_is_quoted_short(memory):
    error = error_of(call(memory, command="read", path="/notes/todo", content="z" * 30_000))
    assert len(error["message"]) < 300 and "zzz..." in error["message"]
