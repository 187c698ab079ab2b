"""Pin the public surface of `cortex_agents.scratch`: no name appears or disappears by accident.

The `memory` tool over the store is `cortex_agents.tools._scratch_tool` (pinned with
`cortex_agents.tools` in test_exported_members.py); its documented values are checked here.
"""

import cortex_agents.scratch as scratch
import cortex_agents.tools as tools
from cortex_agents.scratch import _paths as paths
from cortex_agents.scratch import _store as store
from cortex_agents.tools import _scratch_tool as tool

EXPECTED = {
    # Opening and binding
    "ScratchBackend",
    "ScratchMemory",
    "WriteGuard",
    "open_scratch",
    # Scopes
    "SCRATCH_SCOPES",
    "ScratchScope",
    # What ScratchMemory.files and .list return, and how to show the latter
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
}


def test_public_names_are_pinned():
    assert set(scratch.__all__) == EXPECTED
    assert len(scratch.__all__) == len(EXPECTED)  # no name listed twice
    for name in scratch.__all__:
        assert hasattr(scratch, name), name


def test_every_module_exports_only_what_it_defines():
    from cortex_agents.scratch import _atomic as atomic
    from cortex_agents.scratch import _backends as backends
    from cortex_agents.scratch import _connector as connector
    from cortex_agents.scratch import _edits as edits
    from cortex_agents.scratch import _tree as tree

    for module in (atomic, backends, connector, edits, paths, store, tool, tree):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_documented_values():
    assert tools.MEMORY_TOOL_NAME == tool.MEMORY_TOOL_NAME == "memory"
    assert tool.COMMANDS == (
        "read",
        "list",
        "append",
        "update",
        "delete",
        "view",
        "create",
        "str_replace",
        "insert",
        "rename",
    )
    assert set(tool.COMMANDS) == set(tool.ARGUMENTS) == {*tool.SEED_COMMANDS, *tool.FILE_COMMANDS}
    assert scratch.SCRATCH_SCOPES == ("global", "per_thread")
    assert scratch.PLACEMENTS == ("after_system", "last_message")
    assert scratch.CONTENT_MODES == ("tree", "full")
    assert scratch.DEFAULT_MAX_CHARS == 4000
    assert (paths.MAX_SEGMENT_CHARS, paths.MAX_DEPTH, paths.MAX_PATH_CHARS) == (64, 16, 512)
    assert (store.MAX_FILE_CHARS, store.MAX_FILES) == (32_000, 256)
