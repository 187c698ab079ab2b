"""The rule choosing the held-out case ``demo --compare`` shows, on hand-made tables."""

from __future__ import annotations

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.evaluation._review_runs import showcase
from cortex_agents.evaluation._reviews import build_review_cases

CASES = build_review_cases("heldout")


def _row(detected: bool = False, false_alarm: bool = False, named: tuple[str, ...] = ()) -> dict:
    return {
        "detected": detected,
        "false_alarm": false_alarm,
        "parsed": True,
        "named": list(named),
        "gaps": [],
    }


def _table(rows: dict[str, tuple[dict, dict]] | None = None) -> dict:
    """Every case scored alike (nothing flagged) except ``rows``: case id -> (classic row,
    topological row)."""
    per_case = {c.id: {"classic": _row(), "topological": _row()} for c in CASES}
    for case, (classic, topological) in (rows or {}).items():
        per_case[case] = {"classic": classic, "topological": topological}
    return {"per_case": per_case}


def test_the_first_case_in_id_order_where_only_topological_caught_the_flaw() -> None:
    first, later = CASES[3], CASES[9]
    assert first.flawed and later.flawed and first.id < later.id
    caught = (_row(), _row(detected=True, named=(first.flawed,)))
    table = _table(
        {
            CASES[0].id: (_row(), _row(false_alarm=True, named=("analyst-a",))),
            first.id: caught,
            later.id: (_row(), _row(detected=True, named=(later.flawed,))),
        }
    )
    chosen = showcase(table, CASES)
    assert chosen.case == first and chosen.differs
    assert "caught the planted flaw and the classic one did not" in chosen.rule
    # both caught it: not a difference memory made, so the next rule applies
    both = _table({first.id: (caught[1], caught[1])})
    assert showcase(both, CASES).case == CASES[0] and not showcase(both, CASES).differs


def test_failing_that_the_first_case_whose_reviews_scored_differently() -> None:
    flagged = (_row(), _row(false_alarm=True, named=("analyst-b",)))
    classic_only = (_row(detected=True, named=("analyst-c",)), _row())
    table = _table({CASES[5].id: flagged, CASES[2].id: classic_only})
    chosen = showcase(table, CASES)
    assert chosen.case == CASES[2] and chosen.differs
    assert "scored differently" in chosen.rule and "no held-out case has" in chosen.rule


def test_no_case_differs_says_so_and_shows_the_first() -> None:
    chosen = showcase(_table(), CASES)
    assert chosen.case == CASES[0] and not chosen.differs
    assert chosen.rule.startswith("no held-out case's classic and topological reviews scored")


def test_a_table_that_misses_a_case_or_no_case_is_refused() -> None:
    table = _table()
    del table["per_case"][CASES[4].id]
    with pytest.raises(InvalidArgument, match="per_case") as missing:
        showcase(table, CASES)
    assert missing.value.value == [CASES[4].id]
    with pytest.raises(InvalidArgument, match="must not be empty"):
        showcase(_table(), [])
