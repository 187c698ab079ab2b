"""The structured outputs of the LLM stage kinds (pydantic models).

Small models often answer with broken JSON. :func:`parse_output` reads the
first JSON object that validates; when none does, the stage builds its
output from what it knows (its config, its inputs) plus the raw text, and
marks it ``parsed=False`` — so a run never stops on a model's formatting,
and the substrate says which outputs were salvaged.
"""

from __future__ import annotations

import json
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["Analysis", "Branch", "Merged", "Plan", "Report", "Review", "parse_output"]

M = TypeVar("M", bound=BaseModel)


class _Output(BaseModel):
    model_config = ConfigDict(extra="ignore")

    parsed: bool = Field(
        default=True, description="False when the model's JSON had to be salvaged."
    )


class Branch(BaseModel):
    """One analyst's question."""

    model_config = ConfigDict(extra="ignore")

    claim_ref: str
    question: str


class Plan(_Output):
    """The planner's split of the claim."""

    claim: str
    branches: list[Branch]


class Analysis(_Output):
    """An analyst's finding on its claim part (``claim_ref`` is its routing key)."""

    claim_ref: str
    finding: str
    evidence: list[str] = []


class ClaimFinding(BaseModel):
    """A finding, attributed."""

    model_config = ConfigDict(extra="ignore")

    claim_ref: str
    finding: str


class Merged(_Output):
    """The merge of the analysts' findings."""

    summary: str
    claims: list[ClaimFinding] = []


class Review(_Output):
    """The reviewer's verdict."""

    verdict: Literal["sound", "gap"]
    gaps: list[str] = []
    notes: str = ""
    cited: list[str] = []


class Report(_Output):
    """The rewriter's final report."""

    report: str
    addressed: list[str] = []


def parse_output(text: str, model: type[M]) -> M | None:
    """The first JSON object in ``text`` that validates as ``model``, or ``None``."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            try:
                return model.model_validate(value)
            except ValidationError:
                pass
        start = text.find("{", start + 1)
    return None
