"""Data shown to a model stays data: escaping for delimited blocks.

Stage inputs and recalled memory reach a model between tags (``<inputs>``,
``<memory_results>``, ...; scratch memory has its own fences). Their text was written by earlier
models or by users, so it may contain anything, including a closing tag
followed by instructions. Every interpolated value goes through one of
these functions, so no value can end its block or open another:

* :func:`escape_text` escapes ``&``, ``<`` and ``>`` (and quotes, in an
  attribute) as HTML entities;
* :func:`data_json` writes JSON whose strings carry ``<`` and ``>`` as
  ``\\u`` escapes (still valid JSON, equal when parsed).
"""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["data_json", "escape_text"]

_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e"}


def escape_text(value: object, *, attribute: bool = False) -> str:
    """``value`` as text that cannot open or close a tag.

    ``attribute=True`` also escapes quotes, for a value inside ``key="..."``.
    """
    return html.escape(str(value), quote=attribute)


def data_json(value: Any, *, indent: int | None = 1) -> str:
    """``value`` as canonical JSON (sorted keys) that cannot open or close a tag."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent)
    # Safe on the whole text: JSON's own syntax has no `<` or `>`, so every one is inside
    # a string, where the \u escape parses back to the same character.
    return text.translate(_JSON_ESCAPES)
