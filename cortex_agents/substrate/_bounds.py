"""What one stored value may be: the bounds a run and a snapshot file share.

A run stores values (an output, a config, an error, an id, tags, attempts)
and a snapshot file carries them out and back in. Each bound is defined once,
here: a run refuses what exceeds it where the value enters (a stage whose
output holds a longer string fails, naming the bound), and
:class:`~cortex_agents.snapshotfile.SnapshotLimits` takes its defaults from
it, so ``export`` and ``import`` accept every value a run stored. (Payload
nesting is :data:`~cortex_agents.substrate._events.MAX_DEPTH`, with the rest
of the storable rules.)

Only what enters is checked: reading stored rows stays permissive, so a
database written before a bound existed can still be read, resumed and
validated (``validate DB`` reports the value, ``export`` refuses it).
"""

from __future__ import annotations

import unicodedata
from typing import Any, Final

__all__ = ["MAX_ATTEMPTS", "MAX_ID_CHARS", "MAX_STRING_CHARS", "MAX_TAGS", "id_problem"]

MAX_STRING_CHARS: Final = 1_000_000
"""Characters of one string (or key) in a stored value: an output, a config, an error, a fact."""
MAX_ID_CHARS: Final = 256
"""Characters of an id: a node, a kind, a tag, a run."""
MAX_TAGS: Final = 256
"""Tags of one node."""
MAX_ATTEMPTS: Final = 1_000
"""Starts of one stage (import records one start per attempt)."""


def id_problem(value: Any, max_chars: int = MAX_ID_CHARS) -> str | None:
    """What is wrong with ``value`` as an id (``None`` when it is a good one).

    An id is a non-empty string of at most ``max_chars`` characters with no
    control characters and no lone surrogates: every backend stores it as
    text, and terminals show it.
    """
    if not isinstance(value, str):
        return "must be a string"
    if not value:
        return "must not be empty"
    if len(value) > max_chars:
        return f"must be at most {max_chars} characters (got {len(value)})"
    if value.isascii() and value.isprintable():  # the common id: nothing to look for
        return None
    for ch in value:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs"):
            what = "lone surrogates" if category == "Cs" else "control characters"
            return f"must not contain {what} (found {ch!r})"
    return None
