"""What a rewrite-capable stage may propose: its forms and its attempts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cortex_agents.errors import InvalidArgument
from cortex_agents.rewrite._spec import FORMS, RewriteForm

__all__ = ["RewritePolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RewritePolicy:
    """A stage's rewrite capability, as its wire declares it.

    Whatever the forms, a stage only rewrites at or below itself — the
    anchor is the stage or one of its pending descendants — and never
    settled work; ``expand_replace`` needs a pending anchor other than the
    stage itself.

    Attributes:
        forms: The forms it may use (``append_after``, ``expand_retain``,
            ``expand_replace``).
        attempts: Proposals it may make per stage attempt, admitted or not
            (a model revises within this bound).
    """

    forms: tuple[RewriteForm, ...] = FORMS
    attempts: int = 3

    def __post_init__(self) -> None:
        # A bare string is one form, not a sequence of one-letter forms.
        forms = tuple(self.forms) if not isinstance(self.forms, str) else (self.forms,)
        if not forms or any(f not in FORMS for f in forms) or len(set(forms)) != len(forms):
            raise InvalidArgument(
                "rewrite.forms", f"must be distinct forms among {list(FORMS)}", self.forms
            )
        object.__setattr__(self, "forms", forms)
        if (
            # bool subclasses int: without this, `attempts=True` would pass as 1.
            isinstance(self.attempts, bool)
            or not isinstance(self.attempts, int)
            or not 1 <= self.attempts <= 16
        ):
            raise InvalidArgument(
                "rewrite.attempts", "must be an integer from 1 to 16", self.attempts
            )

    def to_dict(self) -> dict[str, Any]:
        """The wire-file form."""
        return {"forms": list(self.forms), "attempts": self.attempts}
