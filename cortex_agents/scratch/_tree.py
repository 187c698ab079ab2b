"""The directory tree of scratch memory: built from the files, rendered as text.

Pure values and functions: no store, no LangChain. Directories are implicit
(a directory exists while a file exists below it), so the tree is built from
the file paths alone. Children are ordered by name in code-point order, which
makes the rendering deterministic whatever order the store returned.

Rendering, one entry per line, two spaces of indent per level::

    /
      notes/
        todo (12 chars)
      plan (30 chars)

An empty memory renders as ``/ (empty)``. When a character limit is given,
whole lines are kept from the top and a last line says how many entries were
cut, e.g. ``... [3 more entries not shown]``; the result never exceeds the
limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

from cortex_agents.errors import InvalidArgument, StorageError
from cortex_agents.scratch._paths import ROOT, MemoryPath

__all__ = [
    "MIN_RENDER_CHARS",
    "MemoryFile",
    "TreeNode",
    "build_tree",
    "check_max_chars",
    "render_tree",
]

MIN_RENDER_CHARS: Final = 100
"""Smallest character limit a rendering accepts (room for a line and the cut marker)."""


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One file of scratch memory.

    Attributes:
        path: Its normalised path, e.g. ``"/notes/todo"``.
        content: Its text.
    """

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A file or directory in the tree.

    Attributes:
        path: Normalised path; ``"/"`` for the root.
        name: Last segment; ``""`` for the root.
        size: Length of a file's content in characters; ``None`` for a directory.
        children: A directory's entries in code-point order of their names.
    """

    path: str
    name: str
    size: int | None
    children: tuple[TreeNode, ...] = ()

    @property
    def is_dir(self) -> bool:
        """Whether this is a directory."""
        return self.size is None


def check_max_chars(value: object) -> int:
    """``value`` checked as a rendering limit.

    Raises:
        InvalidArgument: ``value`` is not an integer (``bool`` excluded) of at
            least :data:`MIN_RENDER_CHARS`; the field is ``max_chars``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_RENDER_CHARS:
        raise InvalidArgument("max_chars", f"must be an integer >= {MIN_RENDER_CHARS}", value)
    return value


_Entries: TypeAlias = "dict[str, _Entries | int]"
"""A directory being built: child name -> its entries, or a file's size in characters."""


def _corrupt(path: str) -> StorageError:
    return StorageError(
        "corrupt",
        f"scratch memory holds {path!r} and files below it; a path is a file or a directory, "
        "never both, so something other than ScratchMemory wrote to the store",
    )


def _insert(node: _Entries, file: MemoryFile, segments: tuple[str, ...]) -> None:
    above = file.path.count("/") - len(segments)  # segments of the tree's root
    for depth, segment in enumerate(segments[:-1], start=1):
        child = node.setdefault(segment, {})
        if not isinstance(child, dict):
            raise _corrupt("/" + "/".join(file.path.split("/")[1 : 1 + above + depth]))
        node = child
    if isinstance(node.get(segments[-1]), dict):
        raise _corrupt(file.path)
    node[segments[-1]] = len(file.content)


def _freeze(path: MemoryPath, entries: _Entries) -> TreeNode:
    children = []
    for name in sorted(entries):
        value = entries[name]
        child_path = MemoryPath((*path.segments, name))
        if isinstance(value, dict):
            children.append(_freeze(child_path, value))
        else:
            children.append(TreeNode(child_path.text, name, value))
    return TreeNode(path.text, path.name, None, tuple(children))


def build_tree(files: Iterable[MemoryFile], root: MemoryPath = ROOT) -> TreeNode:
    """The directory tree below ``root`` holding ``files``.

    Args:
        files: Files in any order; those not below ``root`` are ignored.
        root: The directory the tree starts at.

    Returns:
        The tree rooted at ``root``, a directory node (with no children when
        no file is below it).

    Raises:
        StorageError: ``corrupt``: a path is both a file and a directory,
            which a store written only through
            :class:`~cortex_agents.scratch.ScratchMemory` never holds.
    """
    prefix = root.child_prefix()
    entries: _Entries = {}
    for file in files:
        if file.path.startswith(prefix):
            _insert(entries, file, tuple(file.path[len(prefix) :].split("/")))
    return _freeze(root, entries)


def _entry_label(node: TreeNode, *, top: bool) -> str:
    if node.is_dir:
        if top:
            return "/" if node.path == "/" else node.path + "/"
        return node.name + "/"
    size = f"({node.size} char{'s' * (node.size != 1)})"
    return f"{node.path if top else node.name} {size}"


def _lines(node: TreeNode, depth: int) -> Iterator[str]:
    for child in node.children:
        yield "  " * depth + _entry_label(child, top=False)
        yield from _lines(child, depth + 1)


def _cut_marker(omitted: int) -> str:
    return f"... [{omitted} more entr{'y' if omitted == 1 else 'ies'} not shown]"


def render_tree(node: TreeNode, max_chars: int | None = None) -> str:
    """Render ``node`` and everything below it as indented lines.

    Args:
        node: The tree (or a single file node) to render.
        max_chars: When given, the result is at most this long: whole lines
            are kept from the top and a marker line counts the rest.

    Returns:
        The rendering, without a trailing newline.

    Raises:
        InvalidArgument: ``max_chars`` is below :data:`MIN_RENDER_CHARS`.
    """
    if max_chars is not None:
        check_max_chars(max_chars)
    top = _entry_label(node, top=True)
    if node.is_dir and not node.children:
        return f"{top} (empty)"
    lines = [top, *_lines(node, 1)]
    text = "\n".join(lines)
    if max_chars is None or len(text) <= max_chars:
        return text
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        marker = _cut_marker(len(lines) - index)
        # Keep this line only if the marker for what remains after it still fits.
        after = used + len(line) + 1 + len(_cut_marker(len(lines) - index - 1))
        if after > max_chars:
            kept.append(marker)
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)
