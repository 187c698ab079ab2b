"""Scratch-memory paths: the rejection corpus, the normal form, and fuzzing of both."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidMemoryPath
from cortex_agents.scratch import ScratchBackend
from cortex_agents.scratch._paths import MAX_DEPTH, MAX_SEGMENT_CHARS, MemoryPath, parse_path
from tests.support.scratch import CORPUS, RecordingStore, node_memory


@pytest.mark.parametrize(("raw", "rule"), CORPUS, ids=[repr(raw)[:40] for raw, _ in CORPUS])
def test_corpus_path_is_rejected_naming_its_rule(raw, rule):
    with pytest.raises(InvalidMemoryPath) as caught:
        parse_path(raw)
    error = caught.value
    assert error.code == "invalid_path"
    assert rule in error.rule
    assert error.path == raw
    assert isinstance(error, ValueError)


def test_corpus_writes_nothing_through_any_command():
    store = RecordingStore()
    memory = node_memory(ScratchBackend.for_store(store), "n")
    rejected = 0
    for raw, _ in CORPUS:
        for operation in (
            lambda p: memory.append(p, "x"),
            lambda p: memory.update(p, "x", "y"),
            lambda p: memory.delete(p),
            lambda p: memory.read(p),
        ):
            with pytest.raises(InvalidMemoryPath):
                operation(raw)
            rejected += 1
    assert rejected == 4 * len(CORPUS)
    assert store.puts == []
    assert store.search((), limit=1000) == []


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("/a", "/a"),
        ("/notes/todo", "/notes/todo"),
        ("//notes///todo/", "/notes/todo"),
        ("/notes/", "/notes"),
        ("/My Notes/2024-01_x", "/My Notes/2024-01_x"),
        ("/a b/c-d/E_F/0 9", "/a b/c-d/E_F/0 9"),
        ("/" + "a" * MAX_SEGMENT_CHARS, "/" + "a" * MAX_SEGMENT_CHARS),
        ("/a" * MAX_DEPTH, "/a" * MAX_DEPTH),
    ],
)
def test_valid_paths_normalise(raw, normal):
    path = parse_path(raw)
    assert path.text == normal
    assert parse_path(path.text) == path


def test_root_is_valid_only_where_allowed():
    assert parse_path("/", allow_root=True).is_root
    assert parse_path("///", allow_root=True).text == "/"
    with pytest.raises(InvalidMemoryPath, match="only `list` accepts"):
        parse_path("/")
    with pytest.raises(InvalidMemoryPath, match="only `list` accepts"):
        parse_path(MemoryPath(()))


def test_a_trailing_newline_is_rejected_although_re_match_with_dollar_accepts_it():
    # The trap the rule exists for: `$` matches before a final newline.
    assert re.match(r"^[A-Za-z0-9_ -]+$", "notes\n") is not None
    with pytest.raises(InvalidMemoryPath, match="newline"):
        parse_path("/notes\n")


@pytest.mark.parametrize("text", ["١٢٣", "ａｂｃ", "１２３", "ß", "é"])
def test_non_ascii_that_isalnum_and_backslash_w_accept_is_rejected(text):
    assert text.isalnum() and re.fullmatch(r"\w+", text)
    with pytest.raises(InvalidMemoryPath, match="must be ASCII"):
        parse_path("/" + text)


def test_memory_path_cannot_be_built_invalid():
    with pytest.raises(InvalidMemoryPath, match="must match"):
        MemoryPath(("a:b",))
    with pytest.raises(InvalidMemoryPath, match=r"must not start or end with `\.`"):
        MemoryPath((".b",))
    with pytest.raises(InvalidMemoryPath, match="levels deep"):
        MemoryPath(("a",) * (MAX_DEPTH + 1))


def test_the_segment_rule_uses_fullmatch_so_a_trailing_newline_fails_it():
    # parse_path refuses control characters before the segment rule runs, but a
    # MemoryPath built from segments (and passed straight through parse_path) reaches
    # the segment rule itself, where `re.match` with `$` would accept "notes\n".
    with pytest.raises(InvalidMemoryPath, match="must match") as caught:
        MemoryPath(("notes\n",))
    assert caught.value.path == "/notes\n"
    with pytest.raises(InvalidMemoryPath, match="must match"):
        MemoryPath(("a", "b\n"))


def test_path_navigation_properties():
    path = parse_path("/a/b/c")
    assert path.name == "c"
    assert [a.text for a in path.ancestors] == ["/a", "/a/b"]
    assert path.child_prefix() == "/a/b/c/"
    assert parse_path("/", allow_root=True).child_prefix() == "/"
    assert str(path) == "/a/b/c"


@pytest.mark.parametrize("raw", [None, 3, b"/a", ["/a"]])
def test_non_string_paths_are_rejected(raw):
    with pytest.raises(InvalidMemoryPath, match="must be a string"):
        parse_path(raw)


# A segment: no space or dot at either end, single dots only between other characters.
_SEGMENT = r"[A-Za-z0-9_-]([A-Za-z0-9_ -]*[A-Za-z0-9_-])?"
_DOTTED = rf"{_SEGMENT}|[A-Za-z0-9_-][A-Za-z0-9_ .-]*[A-Za-z0-9_-]"
VALID_TEXT = re.compile(rf"/|(/({_DOTTED}))+")


@pytest.mark.parametrize(
    ("raw", "segments"),
    [
        ("/memories/notes.md", ("memories", "notes.md")),
        ("/a.b", ("a.b",)),
        ("/v1.2/archive.tar.gz", ("v1.2", "archive.tar.gz")),
        ("//memories//todo list.txt/", ("memories", "todo list.txt")),
    ],
)
def test_file_names_with_an_extension_are_paths(raw, segments):
    path = parse_path(raw)
    assert path.segments == segments
    assert path.text == "/" + "/".join(segments) and parse_path(path.text) == path


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80) | st.text(alphabet="/a. %$\\\n\x00-_Zé٣", max_size=30))
def test_any_string_is_rejected_or_normalised_to_a_valid_path(raw):
    try:
        path = parse_path(raw, allow_root=True)
    except InvalidMemoryPath as error:
        rejection = error
    else:
        rejection = None
    if rejection is not None:
        assert rejection.code == "invalid_path" and rejection.rule
        return
    assert VALID_TEXT.fullmatch(path.text)
    assert len(path.segments) <= MAX_DEPTH
    assert parse_path(path.text, allow_root=True) == path
    # Normalisation only removes slashes; no segment starts or ends with a dot, none holds `..`.
    assert path.text.replace("/", "") == raw.replace("/", "")
    assert all(not s.startswith(".") and not s.endswith(".") for s in path.segments)
    assert ".." not in path.text


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abc/", max_size=10),
    st.sampled_from(["\n", "\x00", "\\", "%", "$", "..", "é", "\t", "．", "٣"]),
    st.text(alphabet="abc/", max_size=10),
)
def test_a_forbidden_character_anywhere_is_rejected(head, bad, tail):
    with pytest.raises(InvalidMemoryPath):
        parse_path("/" + head + bad + tail, allow_root=True)
