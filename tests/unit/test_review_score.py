"""The review eval's structural scorer, on hand-made reviews, and the case set it scores."""

from __future__ import annotations

from collections import Counter

import pytest

from cortex_agents.evaluation._review_arms import oracle_analyst
from cortex_agents.evaluation._review_score import names_branch, score_arm, score_review, wilson
from cortex_agents.evaluation._reviews import (
    CONTROLS,
    FLAW_KINDS,
    HELDOUT_PER_GROUP,
    PER_KIND,
    ReviewCase,
    build_review_cases,
    split_of,
)

CASES = build_review_cases()


def _flawed(analyst: str = "analyst-b") -> ReviewCase:
    return next(c for c in CASES if c.flawed == analyst)


def _control() -> ReviewCase:
    return next(c for c in CASES if c.control)


def _review(*gaps: object, verdict: str = "gap", parsed: bool = True) -> dict:
    return {"verdict": verdict, "gaps": list(gaps), "notes": "", "cited": [], "parsed": parsed}


def test_a_gap_naming_the_flawed_key_detects() -> None:
    score = score_review(_flawed(), _review("C2: the revenue figure has no source."))
    assert (score.detected, score.false_alarm, score.named) == (True, False, ("analyst-b",))


def test_a_gap_naming_the_flawed_analyst_id_detects() -> None:
    score = score_review(_flawed(), _review("analyst-b's evidence contradicts its finding"))
    assert score.detected and not score.false_alarm


def test_a_gap_on_another_branch_is_a_miss_and_a_false_alarm() -> None:
    score = score_review(_flawed(), _review("c1: wrong year"))
    assert (score.detected, score.false_alarm, score.named) == (False, True, ("analyst-a",))


def test_naming_both_the_flawed_and_a_clean_branch_counts_both() -> None:
    score = score_review(_flawed(), _review("c2: no source", "analyst-c: wrong company"))
    assert (score.detected, score.false_alarm) == (True, True)


def test_a_sound_review_misses() -> None:
    score = score_review(_flawed(), _review(verdict="sound"))
    assert (score.detected, score.false_alarm, score.parsed) == (False, False, True)


def test_a_gap_naming_no_branch_misses_without_a_false_alarm_on_a_flawed_case() -> None:
    score = score_review(_flawed(), _review("the revenue figure looks unsourced"))
    assert (score.detected, score.false_alarm, score.named) == (False, False, ())


def test_any_gap_on_a_control_is_a_false_alarm() -> None:
    assert score_review(_control(), _review("something seems off")).false_alarm
    assert score_review(_control(), _review("c3: wrong year")).false_alarm


def test_a_clean_control_review_has_no_false_alarm() -> None:
    for gaps in ((), ("none",), ("No gaps.",), ("  ",), ("N/A",)):
        score = score_review(_control(), _review(*gaps, verdict="sound"))
        assert (score.false_alarm, score.gaps) == (False, ())


def test_a_gap_that_only_names_branches_flags_nothing() -> None:
    for gap in ("c2", "C2.", "analyst-b", "c1, c2, c3", "c2: none", "analyst-b: N/A", "- c2 -"):
        score = score_review(_flawed(), _review(gap))
        assert (score.detected, score.false_alarm, score.gaps) == (False, False, ()), gap
        assert not score_review(_control(), _review(gap)).false_alarm, gap


def test_a_gap_with_a_reason_beyond_the_key_counts() -> None:
    for gap in ("c2: no source", "c2 wrong year", "analyst-b: 2021"):
        assert score_review(_flawed(), _review(gap)).detected, gap
        assert score_review(_control(), _review(gap)).false_alarm, gap


def test_an_unparsable_review_is_a_miss_never_an_error() -> None:
    for review in (None, _review("c2: no source", parsed=False), {"gaps": "c2"}, {"gaps": [3]}):
        score = score_review(_flawed(), review)
        assert not score.detected and not score.false_alarm
    assert not score_review(_flawed(), None).parsed


def test_a_key_inside_a_longer_token_names_nothing() -> None:
    for gap in ("c21 is off", "xc2 is off", "c2-b", "analyst-bb", "c2_x"):
        assert not names_branch(gap, "c2", "analyst-b"), gap
    for gap in ("(c2)", "c2.", "part C2", "ANALYST-B:"):
        assert names_branch(gap, "c2", "analyst-b"), gap


def test_arm_rates_and_intervals() -> None:
    flawed, control = _flawed(), _control()
    scores = [
        score_review(flawed, _review("c2: no source")),
        score_review(flawed, _review("c1: wrong year")),
        score_review(control, _review()),
        score_review(control, _review("c3: wrong company")),
    ]
    arm = score_arm(scores, tool_calls=[1, 1, 0, 2], usage=[(100, 10), (50, 5)]).as_json()
    assert (arm["detection"], arm["false_alarm"]) == (0.5, 0.5)
    assert (arm["tool_calls"], arm["prompt_tokens"], arm["completion_tokens"]) == (4, 150, 15)
    assert arm["detection_ci95"] == [round(x, 4) for x in wilson(1, 2)]


def test_wilson_interval_matches_the_textbook_value() -> None:
    low, high = wilson(8, 10)  # Wilson 95% for 8/10: 0.490 to 0.943
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0


def test_the_case_set_has_one_flaw_per_flawed_case_and_enough_controls() -> None:
    kinds = Counter(c.flaw for c in CASES)
    assert kinds == {**dict.fromkeys(FLAW_KINDS, PER_KIND), None: CONTROLS}
    assert len(CASES) - CONTROLS >= 40 and CONTROLS >= 10
    for case in CASES:
        flawed = [b for b in case.branches if b.analyst == case.flawed]
        assert len(flawed) == (0 if case.control else 1)


@pytest.mark.parametrize("kind", FLAW_KINDS)
def test_the_merge_leaves_out_the_flawed_detail(kind: str) -> None:
    for case in (c for c in CASES if c.flaw == kind):
        bad = case.branch(case.flawed or "")
        # the finding's specifics (figures, other year, other company) are not in the summary
        assert bad.finding not in case.summary
        assert not any(ch.isdigit() for ch in case.summary.replace(str(case.year), ""))
        assert case.company in case.summary and str(case.year) in case.summary


def test_splits_are_deterministic_and_both_hold_flaws_and_controls() -> None:
    assert build_review_cases() == build_review_cases()
    for split in ("dev", "heldout"):
        part = build_review_cases(split)
        assert all(c.split == split == split_of(c.id) for c in part)
        assert any(c.control for c in part) and sum(not c.control for c in part) >= 15
    held = Counter(c.flaw for c in build_review_cases("heldout"))
    assert held == {**dict.fromkeys(FLAW_KINDS, HELDOUT_PER_GROUP), None: HELDOUT_PER_GROUP}
    assert split_of("unsourced-01") == split_of("unsourced-01")


def test_the_oracle_reads_the_flawed_analyst() -> None:
    for case in CASES:
        if not case.control:
            assert oracle_analyst(case) == case.flawed
        assert oracle_analyst(case) in {b.analyst for b in case.branches}


def test_a_case_round_trips_through_json() -> None:
    for case in CASES[:5]:
        assert ReviewCase.from_json(case.to_json()) == case
