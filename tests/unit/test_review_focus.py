"""What a reviewing stage's own recall ranks against (its focus)."""

from __future__ import annotations

from types import SimpleNamespace

from cortex_agents.stages._kinds import review_focus


def ctx(config=None, inputs=None, claim="Acme cut emissions and hired staff"):
    return SimpleNamespace(config=config or {}, inputs=inputs or {}, run_input={"claim": claim})


def test_a_reviewer_focuses_on_the_claim():
    merged = {"contract": "merged", "value": {"summary": "all parts hold"}}
    assert review_focus(ctx(inputs={"merge": merged})) == "Acme cut emissions and hired staff"


def test_a_rewriter_focuses_on_the_gaps_of_the_review_it_reads():
    review = {
        "contract": "review",
        "value": {"verdict": "gap", "gaps": ["contractors were not counted"], "notes": "c2 weak"},
    }
    assert review_focus(ctx(inputs={"reviewer": review})) == "contractors were not counted c2 weak"
    sound = {"contract": "review", "value": {"verdict": "sound", "gaps": [], "notes": "fine"}}
    assert review_focus(ctx(inputs={"reviewer": sound})) == "Acme cut emissions and hired staff"


def test_a_configured_focus_wins():
    assert review_focus(ctx(config={"focus": "  water use  "})) == "water use"
