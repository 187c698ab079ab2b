"""Stage prompts: files, shipped in the wheel, overridable, rendered byte-stably.

A prompt is looked up, in order, in the folder given explicitly, then in
``$CORTEX_PROMPTS_DIR``, then in the shipped ``prompts/``: drop a file with the
same name in your folder to override one. For a stage, ``<kind>.<strategy>.md``
(``classic`` or ``topological``) wins over ``<kind>.md``. Templates use
``$name`` placeholders (``string.Template``), so JSON braces need no escaping;
a missing value is an error, never an empty string.
"""

from __future__ import annotations

import os
from pathlib import Path
from string import Template

from cortex_agents._bundled import bundled_path
from cortex_agents.errors import InvalidArgument

__all__ = ["MEMORY_NUDGE", "REWRITE_NUDGE", "load_prompt", "prompt_for", "render"]

MEMORY_NUDGE = "memory_tool_nudge"
REWRITE_NUDGE = "rewrite_tool_nudge"


def _folders(override: str | Path | None) -> list[Path]:
    folders = []
    if override is not None:
        folders.append(Path(override))
    # Truthiness, not presence: an empty variable means unset, not the current directory.
    if os.environ.get("CORTEX_PROMPTS_DIR"):
        folders.append(Path(os.environ["CORTEX_PROMPTS_DIR"]))
    folders.append(bundled_path("prompts"))
    return folders


def load_prompt(name: str, *, folder: str | Path | None = None) -> str:
    """The text of prompt ``name`` (``name.md``).

    Raises:
        InvalidArgument: no folder has it.
    """
    for directory in _folders(folder):
        path = directory / f"{name}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise InvalidArgument(
        "prompt", f"no prompt file {name}.md in {[str(f) for f in _folders(folder)]}", name
    )


def prompt_for(kind: str, strategy: str, *, folder: str | Path | None = None) -> str:
    """The prompt of a stage: ``<kind>.<strategy>.md``, else ``<kind>.md``."""
    try:
        return load_prompt(f"{kind}.{strategy}", folder=folder)
    except InvalidArgument:
        return load_prompt(kind, folder=folder)


def render(template: str, **values: object) -> str:
    """Fill ``$placeholders``.

    Raises:
        InvalidArgument: a placeholder has no value.
    """
    try:
        # substitute, not safe_substitute: a missing value must fail here rather
        # than reach the model as a literal `$name`.
        return Template(template).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise InvalidArgument(
            "prompt", f"needs a value for ${exc.args[0]}", sorted(values)
        ) from None
