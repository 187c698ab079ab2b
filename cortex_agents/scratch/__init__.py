"""Scratch memory: a small per-node file system on a LangGraph store, and its connector.

How a runtime uses it::

    with open_scratch(db) as backend:            # SQLite path, postgresql:// URL, or None
        memory = backend.bind(stage_id, scope="per_thread", thread_id=thread_id)
        messages = ScratchConnector().inject(messages, memory)   # the stage's prompt
        tools = [make_memory_tool(), ...]        # cortex_agents.tools; reads runtime.context.scratch

Modules:

- :mod:`~cortex_agents.scratch._backends`: :func:`open_scratch`, which opens a
  :class:`ScratchBackend` (a store and its write guard) on a database.
- :mod:`~cortex_agents.scratch._store`: :class:`ScratchBackend` and
  :class:`ScratchMemory`, one node's memory in one scope (``global`` or
  ``per_thread``) with ``read``, ``list``, ``append``, ``update`` and
  ``delete``, and the file-memory commands ``create``, ``str_replace``,
  ``insert`` and ``rename``.
- :mod:`~cortex_agents.scratch._edits`: what a line is, for ``view``,
  ``insert`` and ``str_replace``.
- :mod:`~cortex_agents.scratch._atomic`: :class:`WriteGuard` and the guards
  that make read-modify-write atomic on InMemory, SQLite and Postgres stores.
- :mod:`~cortex_agents.scratch._paths`: what a valid path is.
- :mod:`~cortex_agents.scratch._tree`: the directory tree and its rendering.
- :mod:`~cortex_agents.scratch._connector`: :class:`ScratchConnector`, which
  puts the memory into the model's messages.

Limits and path rules are documented (and importable) in their modules. The
``memory`` LangChain tool over this store lives with the other LangChain tools,
in :mod:`cortex_agents.tools._scratch_tool` (``make_memory_tool``, exported by
:mod:`cortex_agents.tools`): tools sit above the runtime, the store below it.
"""

from cortex_agents.scratch._atomic import WriteGuard
from cortex_agents.scratch._backends import open_scratch
from cortex_agents.scratch._connector import (
    CONTENT_MODES,
    DEFAULT_MAX_CHARS,
    PLACEMENTS,
    ContentMode,
    Placement,
    RenderedMemory,
    ScratchConnector,
    inject_memory,
)
from cortex_agents.scratch._store import SCRATCH_SCOPES, ScratchBackend, ScratchMemory, ScratchScope
from cortex_agents.scratch._tree import MemoryFile, TreeNode, render_tree

__all__ = [
    # Opening and binding
    "ScratchBackend",
    "ScratchMemory",
    "WriteGuard",
    "open_scratch",
    # Scopes
    "SCRATCH_SCOPES",
    "ScratchScope",
    # What `ScratchMemory.files` and `.list` return, and how to show the latter
    "MemoryFile",
    "TreeNode",
    "render_tree",
    # The connector and its options
    "CONTENT_MODES",
    "DEFAULT_MAX_CHARS",
    "PLACEMENTS",
    "ContentMode",
    "Placement",
    "RenderedMemory",
    "ScratchConnector",
    "inject_memory",
]
