"""The directory tree: built from file paths, rendered deterministically, cut with a marker."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.scratch import MemoryFile, render_tree
from cortex_agents.scratch._paths import parse_path
from cortex_agents.scratch._tree import build_tree

FILES = [
    MemoryFile("/b", "xx"),
    MemoryFile("/a_b/c", "x"),
    MemoryFile("/B", ""),
    MemoryFile("/a b", "xyz"),
    MemoryFile("/a-b/c/d", "x" * 10),
    MemoryFile("/a", "x"),
]


def test_children_are_in_code_point_order_whatever_the_input_order():
    expected = "\n".join(
        [
            "/",
            "  B (0 chars)",
            "  a (1 char)",
            "  a b (3 chars)",
            "  a-b/",
            "    c/",
            "      d (10 chars)",
            "  a_b/",
            "    c (1 char)",
            "  b (2 chars)",
        ]
    )
    assert render_tree(build_tree(FILES)) == expected
    assert render_tree(build_tree(reversed(FILES))) == expected


def test_a_subtree_starts_at_its_directory():
    tree = build_tree(FILES, parse_path("/a-b"))
    assert (tree.path, tree.name, tree.is_dir) == ("/a-b", "a-b", True)
    [c] = tree.children
    [d] = c.children
    assert (c.path, c.is_dir, d.path, d.size, d.is_dir) == ("/a-b/c", True, "/a-b/c/d", 10, False)
    assert render_tree(tree) == "/a-b/\n  c/\n    d (10 chars)"


def test_empty_tree():
    assert render_tree(build_tree([])) == "/ (empty)"


@pytest.mark.parametrize(
    ("files", "root", "both"),
    [
        (["/a", "/a/b"], "/", "/a"),
        (["/a/b", "/a"], "/", "/a"),
        (["/r/a/b/c", "/r/a"], "/r", "/r/a"),
        (["/r/a", "/r/a/b/c"], "/r", "/r/a"),
    ],
)
def test_a_path_that_is_both_file_and_directory_is_a_corrupt_store(files, root, both):
    with pytest.raises(StorageError, match="and files below it") as caught:
        build_tree([MemoryFile(path, "x") for path in files], parse_path(root, allow_root=True))
    assert caught.value.code == "corrupt"
    assert f"holds {both!r} " in str(caught.value)


def _many(count: int) -> list[MemoryFile]:
    return [MemoryFile(f"/dir{i:03d}/file", "x" * i) for i in range(count)]


def test_a_long_tree_is_cut_to_whole_lines_with_a_marker():
    tree = build_tree(_many(100))
    full = render_tree(tree)
    cut = render_tree(tree, max_chars=300)
    assert len(full) > 300 >= len(cut)
    kept, marker = cut.rsplit("\n", 1)
    assert full.startswith(kept + "\n")
    shown = kept.count("\n") + 1
    total = full.count("\n") + 1
    assert marker == f"... [{total - shown} more entries not shown]"


def test_a_tree_that_fits_is_not_cut():
    tree = build_tree(_many(10))
    assert render_tree(tree, max_chars=len(render_tree(tree))) == render_tree(tree)


@pytest.mark.parametrize("limit", [0, 99, -1, 150.0, True, "4000"])
def test_the_limit_must_leave_room_for_the_marker(limit):
    with pytest.raises(InvalidArgument) as caught:
        render_tree(build_tree([]), max_chars=limit)
    assert caught.value.field == "max_chars"


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=120), st.integers(min_value=100, max_value=3000))
def test_a_cut_tree_never_exceeds_the_limit(count, limit):
    text = render_tree(build_tree(_many(count)), max_chars=limit)
    assert len(text) <= limit
    if text != render_tree(build_tree(_many(count))):
        assert text.rsplit("\n", 1)[-1].endswith("not shown]")
