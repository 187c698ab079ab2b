"""The structured outputs of the LLM stage kinds, and the answers their models write.

Each stage kind has two pydantic models: the **answer** its model writes
(``ReviewAnswer``: only what the model decides, every field required and
bounded) and the **output** the stage stores (``Review``: the answer plus what
the wire knows, e.g. an analyst's ``claim_ref``, and ``parsed``). The answer's
JSON schema is what a stage asks its model for when it requests structured
output (:mod:`cortex_agents.stages._structured`).

A model may still answer something else (structured output off, a provider
that ignores it, a reply cut at its token cap). :func:`parse_output` reads
the first JSON object in the text that validates; when none does, the stage
builds its output from what it knows plus the raw text and marks it
``parsed=False`` — so a run never stops on a model's formatting, and the
substrate says which outputs were inferred from text.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "Analysis",
    "AnalysisAnswer",
    "Branch",
    "Merged",
    "MergedAnswer",
    "Plan",
    "PlanAnswer",
    "Report",
    "ReportAnswer",
    "Review",
    "ReviewAnswer",
    "parse_output",
]

M = TypeVar("M", bound=BaseModel)


def _bound(**keywords: int) -> Any:
    """Bounds stated in an answer's schema, not enforced when parsing.

    A constrained decoder reads them (they keep a small model's answer short
    enough to end within its token cap); OpenAI's strict mode refuses them, so
    :func:`~cortex_agents.stages._structured.response_format` leaves them out of
    that form; and a longer answer still parses.
    """
    extra: dict[str, Any] = dict(keywords)  # JSON numbers (pydantic wants its JsonDict)
    return Field(json_schema_extra=extra)


Line = Annotated[str, _bound(maxLength=160)]
Ref = Annotated[str, _bound(maxLength=64)]


def _strict(schema: dict[str, Any]) -> None:
    """Every property required, none other allowed, no defaults: what strict structured
    output accepts (the defaults are for parsing only)."""
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)
    schema["required"] = list(schema.get("properties", {}))
    schema["additionalProperties"] = False


class _Answer(BaseModel):
    """What a model writes. The schema asked for requires every field and allows no other;
    parsing is lenient (a missing list or note takes its default, extra keys are ignored),
    so an answer written from the prompt alone, without structured output, still parses."""

    # The strictness lives in the schema sent (json_schema_extra), the leniency in
    # the parser (extra="ignore"): one model, two audiences.
    model_config = ConfigDict(extra="ignore", json_schema_extra=_strict)


class _Output(BaseModel):
    model_config = ConfigDict(extra="ignore")

    parsed: bool = Field(
        default=True,
        description="False when the model's answer was not the JSON asked for and the "
        "output was inferred from its text.",
    )


class Branch(_Answer):
    """One analyst's question."""

    claim_ref: Ref
    question: Annotated[str, _bound(maxLength=240)]


class PlanAnswer(_Answer):
    """The planner's answer: one question per claim part."""

    branches: Annotated[list[Branch], _bound(maxItems=8)]


class Plan(_Output):
    """The planner's split of the claim."""

    claim: str
    branches: list[Branch]


class AnalysisAnswer(_Answer):
    """An analyst's answer: a finding and what it rests on."""

    finding: Annotated[str, _bound(maxLength=300)]
    evidence: Annotated[list[Line], _bound(maxItems=3)] = []


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


class MergedAnswer(_Answer):
    """The merge's answer: a summary (attribution comes from the inputs)."""

    summary: Annotated[str, _bound(maxLength=400)]


class Merged(_Output):
    """The merge of the analysts' findings."""

    summary: str
    claims: list[ClaimFinding] = []


class ReviewAnswer(_Answer):
    """The reviewer's answer."""

    verdict: Literal["sound", "gap"]
    gaps: Annotated[list[Line], _bound(maxItems=3)] = []
    notes: Annotated[str, _bound(maxLength=200)] = ""
    cited: Annotated[list[Ref], _bound(maxItems=5)] = []


class Review(_Output):
    """The reviewer's verdict."""

    verdict: Literal["sound", "gap"]
    gaps: list[str] = []
    notes: str = ""
    cited: list[str] = []


class ReportAnswer(_Answer):
    """The rewriter's answer."""

    report: Annotated[str, _bound(maxLength=500)]
    addressed: Annotated[list[Line], _bound(maxItems=3)] = []


class Report(_Output):
    """The rewriter's final report."""

    report: str
    addressed: list[str] = []


def parse_output(text: str, model: type[M]) -> M | None:
    """The first JSON object in ``text`` that validates as ``model``, or ``None``.

    Control characters inside strings (a raw newline) are accepted: grammar-
    constrained decoders (llama.cpp's) let a model write them, and the answer
    is still the object asked for.
    """
    decoder = json.JSONDecoder(strict=False)
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
        # Every `{` is a candidate start: a model may write prose with braces, or
        # an invalid object, before the one asked for.
        start = text.find("{", start + 1)
    return None
