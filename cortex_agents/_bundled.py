"""Files shipped with cortex-agents: prompts, example graphs and recorded cassettes.

In a source checkout they live at the repository root (``prompts/``,
``graphs/``, ``cassettes/``); a built wheel carries copies under
``cortex_agents/_bundled/``. :func:`bundled_path` finds either.
"""

from __future__ import annotations

from pathlib import Path

from cortex_agents.errors import InvalidArgument

__all__ = ["bundled_path"]

_PACKAGE = Path(__file__).parent
_FOLDERS = ("prompts", "graphs", "cassettes")


def bundled_path(folder: str, name: str = "") -> Path:
    """The path of a shipped folder (or a file in it).

    Raises:
        InvalidArgument: an unknown folder, or a file that is not there.
    """
    if folder not in _FOLDERS:
        raise InvalidArgument("folder", f"must be one of {_FOLDERS}", folder)
    # The package's own copies first: installed, the package's parent is
    # site-packages, where a folder named `prompts` or `graphs` may be anyone's.
    for root in (_PACKAGE / "_bundled" / folder, _PACKAGE.parent / folder):
        if root.is_dir():
            path = root / name if name else root
            if path.exists():
                return path
    raise InvalidArgument("name", f"is not a shipped file in {folder}/", name)
