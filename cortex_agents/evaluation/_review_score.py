"""Scoring a review structurally: did its gaps name the flawed branch? No model judges.

**The rule.** A gap *names* a branch when the gap's text contains the branch's
routing key (``c2``) or its analyst stage id (``analyst-b``) as a whole token:
case-insensitive, and not inside a longer identifier (neither preceded nor
followed by a letter, a digit, ``_`` or ``-``): ``"C2: no source"`` and
``"analyst-b's figure"`` name branch ``c2``/``analyst-b``; ``"c21"`` and
``"xc2"`` do not. A gap that is blank, or only says there is none (``none``,
``n/a``, ``no gaps``, ``no gap``; case and a final period ignored), is no gap.
Nor is a gap that gives no reason: with every branch's key and analyst id
removed (as whole tokens, as above) and punctuation dropped, nothing is left
but such a "none" — ``"c2"``, ``"c1, c2"``, ``"analyst-b."`` and
``"c2: none"`` flag nothing (a small model lists bare keys: that is no finding
of a flaw), ``"c2: no source"`` does.
The verdict is not read: a review's gaps are what it flags.

For one case and one review:

* **detected** (flawed cases only): some gap names the flawed branch;
* **false alarm**: on a flawed case, some gap names a clean branch; on a
  control, the review has any gap at all (named or not);
* a review whose answer did not parse (the stage's output says
  ``parsed: false``, or there is no review) is a **miss** and no false alarm,
  and counts as ``unparsed`` — never an error.

Rates come with 95% Wilson score intervals (:func:`wilson`): detection over
the flawed cases, false alarms over all cases (flawed and controls).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cortex_agents.evaluation._reviews import ReviewCase

__all__ = [
    "ArmScore",
    "CaseScore",
    "gives_reason",
    "names_branch",
    "score_arm",
    "score_review",
    "wilson",
]

_NO_GAP: Final = re.compile(r"\s*(none|n/a|no gaps?)?\s*\.?\s*", re.IGNORECASE)
# `/` is kept so "n/a" survives as a "none"; `_` is in \w but counts as punctuation.
_PUNCTUATION: Final = re.compile(r"[^\w/]+|_")
# The standard normal's 0.975 quantile, written out so scoring needs no scipy.
_Z95: Final = 1.959963984540054


def _token(name: str) -> str:
    return rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])"


def names_branch(gap: str, routing_key: str, analyst: str) -> bool:
    """Whether ``gap`` names the branch (see the module's rule)."""
    return any(re.search(_token(t), gap, re.IGNORECASE) for t in (routing_key, analyst))


def gives_reason(gap: str, case: ReviewCase) -> bool:
    """Whether ``gap`` says more than the names of ``case``'s branches (see the module's rule)."""
    rest = gap
    for branch in case.branches:
        for name in (branch.claim_ref, branch.analyst):
            rest = re.sub(_token(name), " ", rest, flags=re.IGNORECASE)
    rest = _PUNCTUATION.sub(" ", rest).strip()
    return not _NO_GAP.fullmatch(rest)


@dataclass(frozen=True, slots=True)
class CaseScore:
    """One review of one case, scored.

    Attributes:
        case: The case id.
        flawed: Whether the case has a planted flaw.
        parsed: Whether the review's answer parsed.
        detected: A gap named the flawed branch (always false on a control).
        false_alarm: A gap named a clean branch, or (on a control) any gap.
        named: The analysts the gaps named, in wire order.
        gaps: The gaps that count (blank, "none" and bare names left out).
    """

    case: str
    flawed: bool
    parsed: bool
    detected: bool
    false_alarm: bool
    named: tuple[str, ...]
    gaps: tuple[str, ...]


def _gaps(review: Mapping[str, Any], case: ReviewCase) -> tuple[str, ...]:
    raw = review.get("gaps")
    items = raw if isinstance(raw, list) else []
    return tuple(g for g in items if isinstance(g, str) and gives_reason(g, case))


def score_review(case: ReviewCase, review: Mapping[str, Any] | None) -> CaseScore:
    """Score ``review`` (a reviewer stage's output value: ``verdict``, ``gaps``, ``parsed``...)
    against ``case``; ``None`` or an answer that did not parse is a miss."""
    if not isinstance(review, Mapping) or review.get("parsed") is False:
        # `flawed` still says what the case is: an unparsed review of a flawed case
        # stays in detection's denominator, as a miss.
        return CaseScore(case.id, not case.control, False, False, False, (), ())
    gaps = _gaps(review, case)
    named = tuple(
        b.analyst
        for b in case.branches
        if any(names_branch(g, b.claim_ref, b.analyst) for g in gaps)
    )
    if case.control:
        return CaseScore(case.id, False, True, False, bool(gaps), named, gaps)
    detected = case.flawed in named
    clean_named = any(a != case.flawed for a in named)
    return CaseScore(case.id, True, True, detected, clean_named, named, gaps)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (``(0.0, 1.0)`` with no trials)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True, slots=True)
class ArmScore:
    """An arm's scores over a split.

    Attributes:
        cases: Cases reviewed.
        flawed: Of them, with a planted flaw.
        detected: Flawed cases whose flawed branch a gap named.
        false_alarms: Cases with a false alarm.
        unparsed: Reviews whose answer did not parse.
        tool_calls: Tool calls the reviewer made, over all cases.
        prompt_tokens: Prompt tokens of every model response (their ``usage``).
        completion_tokens: Completion tokens of every model response.
    """

    cases: int
    flawed: int
    detected: int
    false_alarms: int
    unparsed: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int

    def as_json(self) -> dict[str, Any]:
        """Rates (rounded to 4 places), their 95% intervals and the counts."""
        detection = self.detected / self.flawed if self.flawed else 0.0
        false_alarm = self.false_alarms / self.cases if self.cases else 0.0
        return {
            "detection": round(detection, 4),
            "detection_ci95": [round(x, 4) for x in wilson(self.detected, self.flawed)],
            "false_alarm": round(false_alarm, 4),
            "false_alarm_ci95": [round(x, 4) for x in wilson(self.false_alarms, self.cases)],
            "cases": self.cases,
            "flawed": self.flawed,
            "detected": self.detected,
            "false_alarms": self.false_alarms,
            "unparsed": self.unparsed,
            "tool_calls": self.tool_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def score_arm(
    scores: Sequence[CaseScore],
    *,
    tool_calls: Iterable[int] = (),
    usage: Iterable[tuple[int, int]] = (),
) -> ArmScore:
    """Sum an arm's case scores; ``usage`` holds ``(prompt, completion)`` tokens per response."""
    usage = list(usage)
    return ArmScore(
        cases=len(scores),
        flawed=sum(s.flawed for s in scores),
        detected=sum(s.detected for s in scores),
        false_alarms=sum(s.false_alarm for s in scores),
        unparsed=sum(not s.parsed for s in scores),
        tool_calls=sum(tool_calls),
        prompt_tokens=sum(p for p, _ in usage),
        completion_tokens=sum(c for _, c in usage),
    )
