"""Scratch memory of one node, as files and directories on a LangGraph store.

Layout. Each (node id, scope[, thread id]) has its own store namespace::

    ("cortex_scratch", <node id>, "global")
    ("cortex_scratch", <node id>, "per_thread", <thread id>)

Ids are escaped (``%`` as ``%25``, ``.`` as ``%2E``) because LangGraph joins
namespace labels with ``.`` and refuses a ``.`` inside one; the escape is
injective, so two ids never share a namespace. Inside it, a file is one item
whose **key is the file's normalised path** (``"/notes/todo"``) and whose
value is ``{"content": <text>}``; nothing is ever keyed by a dotted form, so
paths cannot collide. Directories are not stored: a directory exists while a
file exists below it, and a path is never both a file and a directory.

Limits: a file holds at most :data:`MAX_FILE_CHARS` characters and a
namespace at most :data:`MAX_FILES` files. Text must not contain NUL (Postgres
``jsonb`` cannot hold it) nor lone surrogates (not encodable as UTF-8).

Every refused operation raises before anything is written: invalid input
raises :class:`~cortex_agents.errors.InvalidMemoryPath` or
:class:`~cortex_agents.errors.InvalidArgument`; a missing path
:class:`~cortex_agents.errors.MemoryNotFound`; a file operation on a
directory :class:`~cortex_agents.errors.MemoryIsADirectory`; a path below a
file :class:`~cortex_agents.errors.MemoryNotADirectory`; an item that is not
scratch memory :class:`~cortex_agents.errors.StorageError` (code ``corrupt``).

Binding. A :class:`ScratchBackend` pairs the store with the one
:class:`~cortex_agents.scratch.WriteGuard` its writers share;
:meth:`ScratchBackend.bind` gives a node's :class:`ScratchMemory` in one scope.
Writes run under that guard, so they are atomic under concurrent writers in
several threads and processes.

Commands. The seed's ``read``, ``list``, ``append``, ``update`` (every
occurrence, returns the count) and ``delete``; and the file-memory commands
models are trained on: ``create`` (write a whole file), ``str_replace`` (the
one occurrence: 0 or several is an error naming the count), ``insert`` (at a
line number, as :mod:`~cortex_agents.scratch._edits` counts lines) and
``rename`` (a file or a directory, within this scope, in one store write).
``view`` is the tool's: ``read`` with line numbers, or ``list``.

Cost. The store API has no key-prefix query and no projection, so listing,
rendering, directory deletes, renames, creating a file and the error of a
missing path read every item of the namespace with its content: at most
:data:`MAX_FILES` x :data:`MAX_FILE_CHARS` characters. ``read`` of an
existing file, ``update``, ``str_replace``, ``insert``, and appends to or
overwrites of an existing file read one item, and
:meth:`ScratchMemory.is_empty` at most one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Final, Literal, get_args

from langgraph.store.base import BaseStore, Item, PutOp

from cortex_agents.errors import (
    InvalidArgument,
    InvalidMemoryPath,
    MemoryIsADirectory,
    MemoryNotADirectory,
    MemoryNotFound,
    ScratchMemoryError,
    StorageError,
)
from cortex_agents.scratch._atomic import WriteGuard, guard_for
from cortex_agents.scratch._edits import insert_lines, replace_once
from cortex_agents.scratch._paths import MAX_PATH_CHARS, MemoryPath, parse_path
from cortex_agents.scratch._tree import MemoryFile, TreeNode, build_tree

__all__ = [
    "MAX_FILES",
    "MAX_FILE_CHARS",
    "NAMESPACE_ROOT",
    "SCRATCH_SCOPES",
    "ScratchBackend",
    "ScratchMemory",
    "ScratchScope",
    "scratch_namespace",
    "shorten",
]

ScratchScope = Literal["global", "per_thread"]
"""``global``: shared by every thread of the node; ``per_thread``: one per thread."""

SCRATCH_SCOPES: Final[tuple[str, ...]] = get_args(ScratchScope)
NAMESPACE_ROOT: Final = "cortex_scratch"
MAX_FILE_CHARS: Final = 32_000
"""Most characters one file holds."""
MAX_FILES: Final = 256
"""Most files one namespace holds."""
MAX_ID_CHARS: Final = 256


def shorten(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters plus ``...``, for quoting in an error message."""
    return text if len(text) <= limit else text[:limit] + "..."


def _check_text(name: str, value: object, *, allow_empty: bool) -> str:
    """Check that ``value`` can be stored as scratch-memory text.

    Args:
        name: The field, for the error (``"content"``, ``"old"``, ``"new"``).
        value: The candidate text.
        allow_empty: Whether ``""`` is acceptable.

    Returns:
        ``value``, now known to be a storable string.

    Raises:
        InvalidArgument: Not a string, empty when not allowed, contains NUL or
            a lone surrogate, or longer than :data:`MAX_FILE_CHARS`.
    """
    if not isinstance(value, str):
        raise InvalidArgument(name, "must be a string", type(value).__name__)
    if not value and not allow_empty:
        raise InvalidArgument(name, "must not be empty", value)
    if len(value) > MAX_FILE_CHARS:
        raise InvalidArgument(name, f"must be at most {MAX_FILE_CHARS} characters", len(value))
    if "\x00" in value:
        raise InvalidArgument(name, "must not contain NUL (U+0000)", shorten(value))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(
            name, "must be valid Unicode text, without lone surrogates", shorten(value)
        ) from None
    return value


def _namespace_label(name: str, value: object) -> str:
    """``value`` checked as an id and escaped as one namespace label (see the module docstring)."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument(name, "must be a non-empty string", value)
    if len(value) > MAX_ID_CHARS:
        raise InvalidArgument(name, f"must be at most {MAX_ID_CHARS} characters", len(value))
    if "\x00" in value:
        raise InvalidArgument(name, "must not contain NUL (U+0000)", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(name, "must be valid Unicode text", value) from None
    # `%` first: escaping `.` first would turn its `%2E` into `%252E` and two ids
    # could meet in one label.
    return value.replace("%", "%25").replace(".", "%2E")


def scratch_namespace(
    node_id: str, scope: ScratchScope, thread_id: str | None = None
) -> tuple[str, ...]:
    """The store namespace of a node's scratch memory in one scope.

    Args:
        node_id: The node (stage) the memory belongs to.
        scope: ``"global"`` or ``"per_thread"``.
        thread_id: Required for ``per_thread``; must be None for ``global``.

    Returns:
        The namespace tuple; see the module docstring.

    Raises:
        InvalidArgument: An id is empty, too long or not storable, the scope
            is unknown, or ``thread_id`` does not fit the scope.
    """
    node = _namespace_label("node_id", node_id)
    if scope == "global":
        if thread_id is not None:
            raise InvalidArgument("thread_id", "must be None when `scope` is 'global'", thread_id)
        return (NAMESPACE_ROOT, node, "global")
    if scope == "per_thread":
        if thread_id is None:
            raise InvalidArgument("thread_id", "is required when `scope` is 'per_thread'")
        return (NAMESPACE_ROOT, node, "per_thread", _namespace_label("thread_id", thread_id))
    raise InvalidArgument("scope", f"must be one of {', '.join(map(repr, SCRATCH_SCOPES))}", scope)


def _content(item: Item) -> str:
    content = item.value.get("content")
    if not isinstance(content, str):
        raise StorageError(
            "corrupt",
            f"store item {item.key!r} in namespace {tuple(item.namespace)!r} is not scratch "
            "memory: its value has no string `content`; something other than ScratchMemory "
            "wrote it",
        )
    return content


def _scan_namespace(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, str]:
    """Every file of ``namespace`` read through ``store``: path -> content."""
    # One page holds a full namespace plus one, so the loop normally ends after
    # one search; it still pages on if something else wrote more.
    page = MAX_FILES + 1
    found: dict[str, str] = {}
    offset = 0
    while True:
        items = store.search(namespace, limit=page, offset=offset)
        for item in items:
            # search() matches a namespace prefix: items of a deeper namespace are not
            # files of this one.
            if tuple(item.namespace) == namespace:
                found[item.key] = _content(item)
        if len(items) < page:
            return found
        offset += len(items)


@dataclass(frozen=True, slots=True)
class ScratchBackend:
    """Where scratch memory lives: a LangGraph store and the one write guard its writers share.

    :func:`~cortex_agents.scratch.open_scratch` opens one on a database and
    closes it afterwards; :meth:`for_store` wraps a store you opened
    yourself. Bind every memory on the store through one backend: an
    in-memory store's guard is a lock that excludes only the writers holding
    the same guard.

    Attributes:
        store: The LangGraph store holding every node's memory.
        guard: Makes read-modify-write atomic on ``store``
            (see :mod:`cortex_agents.scratch._atomic`).
    """

    store: BaseStore
    guard: WriteGuard = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.store, BaseStore):
            raise InvalidArgument(
                "store", "must be a LangGraph BaseStore", type(self.store).__name__
            )
        if not isinstance(self.guard, WriteGuard):
            raise InvalidArgument(
                "guard",
                "must be a WriteGuard (an object with a `hold(namespace)` method)",
                type(self.guard).__name__,
            )

    @classmethod
    def for_store(cls, store: BaseStore) -> ScratchBackend:
        """A backend on ``store`` with a new guard chosen by :func:`guard_for`.

        Raises:
            InvalidArgument: ``store`` is not an InMemory, SQLite or Postgres
                store (build ``ScratchBackend(store, guard)`` instead), or is
                a ``PostgresStore`` opened with ``pipeline=True``.
        """
        return cls(store, guard_for(store))

    def bind(self, node_id: str, *, scope: ScratchScope, thread_id: str | None) -> ScratchMemory:
        """The memory a run of ``node_id`` on ``thread_id`` works on.

        Args:
            node_id: The node (stage) the memory belongs to.
            scope: ``"global"`` (every thread of the node shares it) or
                ``"per_thread"`` (one per thread).
            thread_id: The run's thread. Required for ``per_thread``; ignored
                for ``global``, so a runtime can always pass the thread it has.

        Raises:
            InvalidArgument: an id is empty, too long or not storable, the
                scope is unknown, or ``per_thread`` has no thread id.
        """
        bound_thread = thread_id if scope == "per_thread" else None
        return ScratchMemory(self, node_id=node_id, scope=scope, thread_id=bound_thread)


@dataclass(frozen=True, slots=True)
class ScratchMemory:
    """One node's scratch memory in one scope; get one from :meth:`ScratchBackend.bind`.

    Attributes:
        backend: The store and the write guard it lives on.
        node_id: The node (stage) it belongs to.
        scope: ``"global"`` (every thread of the node) or ``"per_thread"``.
        thread_id: The thread, for ``per_thread``; None for ``global``.
        namespace: The store namespace, derived from the ids and the scope.
    """

    backend: ScratchBackend
    _: KW_ONLY
    node_id: str
    scope: ScratchScope = "global"
    thread_id: str | None = None
    namespace: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.backend, ScratchBackend):
            raise InvalidArgument(
                "backend",
                "must be a ScratchBackend (from `open_scratch` or `ScratchBackend.for_store`)",
                type(self.backend).__name__,
            )
        namespace = scratch_namespace(self.node_id, self.scope, self.thread_id)
        object.__setattr__(self, "namespace", namespace)

    @property
    def store(self) -> BaseStore:
        """The LangGraph store holding this memory."""
        return self.backend.store

    @property
    def guard(self) -> WriteGuard:
        """The write guard every writer of the store shares."""
        return self.backend.guard

    def global_view(self) -> ScratchMemory:
        """The same node's ``global`` memory on the same backend."""
        return self.backend.bind(self.node_id, scope="global", thread_id=None)

    # -- reads ---------------------------------------------------------------

    def read(self, path: str) -> str:
        """The content of the file at ``path``.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            MemoryNotFound, MemoryIsADirectory, MemoryNotADirectory: as named.
        """
        where = parse_path(path)
        # Unguarded: every write is one put or one batch, so a read needs no lock.
        item = self.store.get(self.namespace, where.text)
        if item is not None:
            return _content(item)
        raise self._absent(where, path, self._scan(self.store))

    def files(self, path: str = "/") -> tuple[MemoryFile, ...]:
        """Every file at or below ``path``, in code-point order of their paths.

        Raises:
            InvalidMemoryPath: ``path`` is invalid.
            MemoryNotFound, MemoryNotADirectory: nothing is at ``path``
                (the root always exists, so ``files("/")`` never raises these).
        """
        return self._collect(parse_path(path, allow_root=True), path)

    def list(self, path: str = "/") -> TreeNode:
        """The directory tree at ``path`` (``/`` by default); a file gives its own node.

        Raises:
            InvalidMemoryPath: ``path`` is invalid.
            MemoryNotFound, MemoryNotADirectory: nothing is at ``path``.
        """
        where = parse_path(path, allow_root=True)
        found = self._collect(where, path)
        if len(found) == 1 and found[0].path == where.text:
            return TreeNode(where.text, where.name, len(found[0].content))
        return build_tree(found, where)

    def is_empty(self) -> bool:
        """Whether this scope holds no file; reads at most one item."""
        # No scratch namespace has a child namespace, so a prefix search sees only this one.
        return not self.store.search(self.namespace, limit=1)

    # -- writes (each under the write guard) ----------------------------------

    def append(self, path: str, content: str) -> int:
        """Append ``content`` to the file at ``path``, creating it if needed.

        The text goes on a new line: a newline is put between the old content
        and ``content`` unless the file is empty or already ends with one.

        Returns:
            The file's length in characters afterwards.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            InvalidArgument: ``content`` is empty or not storable, the file
                would exceed :data:`MAX_FILE_CHARS`, or a new file would
                exceed :data:`MAX_FILES`.
            MemoryIsADirectory: ``path`` is a directory.
            MemoryNotADirectory: a directory above ``path`` is a file.
        """
        where = parse_path(path)
        _check_text("content", content, allow_empty=False)
        with self.guard.hold(self.namespace) as store:
            item = store.get(self.namespace, where.text)
            if item is None:
                self._check_new_file(store, where, path)
                current = ""
            else:
                current = _content(item)
            separator = "\n" if current and not current.endswith("\n") else ""
            updated = current + separator + content
            if len(updated) > MAX_FILE_CHARS:
                raise InvalidArgument(
                    "content",
                    f"would make {where.text!r} {len(updated)} characters long; "
                    f"a file holds at most {MAX_FILE_CHARS}",
                    shorten(content),
                )
            store.put(self.namespace, where.text, {"content": updated}, index=False)
            return len(updated)

    def update(self, path: str, old: str, new: str) -> int:
        """Replace every occurrence of ``old`` in the file at ``path`` with ``new``.

        Returns:
            How many occurrences were replaced; 0 leaves the file untouched.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            InvalidArgument: ``old`` is empty, a text is not storable, or the
                file would exceed :data:`MAX_FILE_CHARS`.
            MemoryNotFound, MemoryIsADirectory, MemoryNotADirectory: as named.
        """
        where = parse_path(path)
        _check_text("old", old, allow_empty=False)
        _check_text("new", new, allow_empty=True)
        with self.guard.hold(self.namespace) as store:
            item = store.get(self.namespace, where.text)
            if item is None:
                raise self._absent(where, path, self._scan(store))
            current = _content(item)
            count = current.count(old)
            if count == 0:
                return 0
            updated = current.replace(old, new)
            if len(updated) > MAX_FILE_CHARS:
                raise InvalidArgument(
                    "new",
                    f"would make {where.text!r} {len(updated)} characters long; "
                    f"a file holds at most {MAX_FILE_CHARS}",
                    shorten(new),
                )
            store.put(self.namespace, where.text, {"content": updated}, index=False)
            return count

    def delete(self, path: str) -> int:
        """Delete the file at ``path``, or the directory and every file below it.

        The root cannot be deleted (delete its entries one by one).

        Returns:
            How many files were removed.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            MemoryNotFound, MemoryNotADirectory: nothing is at ``path``.
        """
        where = parse_path(path)
        with self.guard.hold(self.namespace) as store:
            # A file is one get; only a directory delete needs the whole namespace scanned.
            if store.get(self.namespace, where.text) is not None:
                store.delete(self.namespace, where.text)
                return 1
            files = self._scan(store)
            below = sorted(key for key in files if key.startswith(where.child_prefix()))
            if not below:
                raise self._absent(where, path, files)
            store.batch([PutOp(self.namespace, key, None) for key in below])
            return len(below)

    def create(self, path: str, text: str) -> bool:
        """Write ``text`` as the whole content of the file at ``path``, creating it if needed.

        Returns:
            True when the file is new, False when an existing file was overwritten.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            InvalidArgument: ``text`` is not storable (it may be empty), or a
                new file would exceed :data:`MAX_FILES`.
            MemoryIsADirectory: ``path`` is a directory.
            MemoryNotADirectory: a directory above ``path`` is a file.
        """
        where = parse_path(path)
        _check_text("file_text", text, allow_empty=True)
        with self.guard.hold(self.namespace) as store:
            exists = store.get(self.namespace, where.text) is not None
            if not exists:
                self._check_new_file(store, where, path)
            store.put(self.namespace, where.text, {"content": text}, index=False)
            return not exists

    def str_replace(self, path: str, old_str: str, new_str: str) -> int:
        """Replace the one occurrence of ``old_str`` in the file at ``path`` with ``new_str``.

        Unlike :meth:`update`, which replaces every occurrence, ``old_str``
        must occur exactly once; otherwise nothing is written.

        Returns:
            The file's length in characters afterwards.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            InvalidArgument: ``old_str`` is empty or occurs 0 or several times
                (the message gives the count), a text is not storable, or the
                file would exceed :data:`MAX_FILE_CHARS`.
            MemoryNotFound, MemoryIsADirectory, MemoryNotADirectory: as named.
        """
        where = parse_path(path)
        _check_text("old_str", old_str, allow_empty=False)
        _check_text("new_str", new_str, allow_empty=True)
        with self.guard.hold(self.namespace) as store:
            current = self._file(store, where, path)
            updated = replace_once(current, old_str, new_str, path=where.text)
            return self._rewrite(store, where, updated, "new_str", new_str)

    def insert(self, path: str, insert_line: int, insert_text: str) -> int:
        """Insert ``insert_text`` after line ``insert_line`` of the file at ``path``.

        Lines are counted as :mod:`~cortex_agents.scratch._edits` describes:
        0 inserts at the top, the file's line count at the end.

        Returns:
            The file's length in characters afterwards.

        Raises:
            InvalidMemoryPath: ``path`` is invalid or the root.
            InvalidArgument: ``insert_line`` is out of range, ``insert_text``
                is empty or not storable, or the file would exceed
                :data:`MAX_FILE_CHARS`.
            MemoryNotFound, MemoryIsADirectory, MemoryNotADirectory: as named.
        """
        where = parse_path(path)
        _check_text("insert_text", insert_text, allow_empty=False)
        with self.guard.hold(self.namespace) as store:
            current = self._file(store, where, path)
            updated = insert_lines(current, insert_line, insert_text, path=where.text)
            return self._rewrite(store, where, updated, "insert_text", insert_text)

    def rename(self, old_path: str, new_path: str) -> int:
        """Move the file or directory at ``old_path`` to ``new_path``, in this scope.

        Everything moves in one store write (one ``batch``), so readers see
        the memory before or after the move, never half of it. A memory is
        one scope: there is no path naming another scope's file, and
        ``old_path`` that only the node's ``global`` memory holds (which a
        prompt may show when this thread's memory is empty) is refused.

        Returns:
            How many files moved.

        Raises:
            InvalidMemoryPath: a path is invalid or the root, or a moved
                file's new path would break a path rule (too deep or too long).
            InvalidArgument: ``new_path`` exists, is ``old_path`` or lies
                below it, or ``old_path`` is in another scope.
            MemoryNotFound: nothing is at ``old_path``.
            MemoryNotADirectory: a directory above ``new_path`` is a file.
        """
        source = parse_path(old_path)
        target = parse_path(new_path)
        if target == source or target.text.startswith(source.child_prefix()):
            raise InvalidArgument(
                "new_path",
                f"must not be {source.text!r} itself or lie below it; choose a path outside it",
                new_path,
            )
        with self.guard.hold(self.namespace) as store:
            files = self._scan(store)
            if source.text in files:
                moved = {source.text: target.text}
            else:
                prefix = source.child_prefix()
                moved = {
                    key: target.text + key[len(source.text) :]
                    for key in sorted(files)
                    if key.startswith(prefix)
                }
            if not moved:
                raise self._missing_source(store, source, old_path, files)
            self._check_target(target, new_path, files)
            for key in moved.values():
                if len(key) > MAX_PATH_CHARS:
                    raise InvalidMemoryPath(
                        key, f"is {len(key)} characters long; the limit is {MAX_PATH_CHARS}"
                    )
                MemoryPath(tuple(key[1:].split("/")))  # depth and segments
            ops = [
                PutOp(self.namespace, new, {"content": files[old]}, index=False)
                for old, new in moved.items()
            ]
            # PutOp with value None is LangGraph's delete: copies and removals go in one
            # batch, so a reader never sees a file in both places or in neither.
            ops += [PutOp(self.namespace, old, None) for old in moved]
            store.batch(ops)
            return len(moved)

    # -- helpers ---------------------------------------------------------------

    def _file(self, store: BaseStore, where: MemoryPath, given: str) -> str:
        """The content of the file at ``where``, read through ``store``; raises when it is none."""
        item = store.get(self.namespace, where.text)
        if item is None:
            raise self._absent(where, given, self._scan(store))
        return _content(item)

    def _rewrite(
        self, store: BaseStore, where: MemoryPath, updated: str, field_name: str, given: str
    ) -> int:
        """Store ``updated`` as the file's content after checking its size; its length."""
        if len(updated) > MAX_FILE_CHARS:
            raise InvalidArgument(
                field_name,
                f"would make {where.text!r} {len(updated)} characters long; "
                f"a file holds at most {MAX_FILE_CHARS}",
                shorten(given),
            )
        store.put(self.namespace, where.text, {"content": updated}, index=False)
        return len(updated)

    def _check_new_file(self, store: BaseStore, where: MemoryPath, given: str) -> None:
        """Raise unless a new file may be created at ``where`` (nothing there, room left)."""
        files = self._scan(store)
        error = self._absent(where, given, files)
        if not isinstance(error, MemoryNotFound):
            raise error
        if len(files) >= MAX_FILES:
            raise InvalidArgument(
                "path",
                f"would be a new file, but this memory already holds {len(files)} files "
                f"(the limit is {MAX_FILES}); write to an existing file or delete one",
                given,
            )

    def _missing_source(
        self, store: BaseStore, source: MemoryPath, given: str, files: Mapping[str, str]
    ) -> ScratchMemoryError | InvalidArgument:
        """Why ``rename`` has nothing to move at ``source``; reads through the guarded ``store``."""
        if self.scope == "per_thread":
            shared = _scan_namespace(store, self.global_view().namespace)
            if source.text in shared or any(k.startswith(source.child_prefix()) for k in shared):
                return InvalidArgument(
                    "old_path",
                    f"is in this node's `global` memory, not in this thread's `per_thread` "
                    f"memory; `rename` moves files within one scope and cannot move "
                    f"{source.text!r} out of another",
                    given,
                )
        return self._absent(source, given, files)

    @staticmethod
    def _check_target(target: MemoryPath, given: str, files: Mapping[str, str]) -> None:
        """Raise unless ``target`` is free: no file or directory there, no file above it."""
        if target.text in files or any(key.startswith(target.child_prefix()) for key in files):
            raise InvalidArgument(
                "new_path",
                f"already exists: {target.text!r} is a "
                f"{'file' if target.text in files else 'directory'}; `rename` does not "
                "overwrite, so delete it first or choose another path",
                given,
            )
        for ancestor in target.ancestors:
            if ancestor.text in files:
                raise MemoryNotADirectory(given, ancestor.text)

    def _collect(self, where: MemoryPath, given: object) -> tuple[MemoryFile, ...]:
        files = self._scan(self.store)
        if where.text in files:
            return (MemoryFile(where.text, files[where.text]),)
        prefix = where.child_prefix()
        found = tuple(
            MemoryFile(key, files[key]) for key in sorted(files) if key.startswith(prefix)
        )
        if not found and not where.is_root:
            raise self._absent(where, given, files)
        return found

    def _scan(self, store: BaseStore) -> dict[str, str]:
        """Every file of the namespace: path -> content."""
        return _scan_namespace(store, self.namespace)

    @staticmethod
    def _absent(where: MemoryPath, given: object, files: Mapping[str, str]) -> ScratchMemoryError:
        """Why ``where``, which is not a file, cannot be used as one."""
        shown = given if isinstance(given, str) else where.text
        if any(key.startswith(where.child_prefix()) for key in files):
            return MemoryIsADirectory(shown)
        for ancestor in where.ancestors:
            if ancestor.text in files:
                return MemoryNotADirectory(shown, ancestor.text)
        return MemoryNotFound(shown)
