"""The passage a model is shown of each match: the window that scores highest for the query."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cortex_agents.tools._passages import best_passages


def _count(text: str) -> int:
    return len(text.split())


def _cut(text: str, budget: int) -> str:
    return " ".join(text.split()[:budget])


def test_the_window_holding_the_query_terms_is_shown_with_ellipses() -> None:
    body = (
        "The river runs north. It floods every spring. "
        "Heinkel HD 23 was built in 1926. The town has a market."
    )
    (passage,) = best_passages(
        [body], "When was the Heinkel HD 23 built?", 10, count=_count, cut=_cut
    )
    assert passage == "… Heinkel HD 23 was built in 1926. …"


def test_a_query_without_tokens_shows_each_body_from_its_start_cut_to_the_budget() -> None:
    body = "First sentence here. Second sentence there. Third one."
    (passage,) = best_passages([body], "", 4, count=_count, cut=_cut)
    assert passage == "First sentence here.…"


def test_a_term_every_body_repeats_weighs_less_than_a_distinctive_one() -> None:
    bodies = [
        "Acme Corp grew fast. The plant opened in 1926.",
        "Acme Corp moved. Acme Corp closed.",
        "Acme Corp hired.",
    ]
    # 5 sentences: "acme" and "corp" are in 4 (0.288 each), "1926" in 1 (ln 4 = 1.386)
    first, *_ = best_passages(bodies, "Acme Corp 1926", 6, count=_count, cut=_cut)
    assert first == "… The plant opened in 1926."


# Three bodies of a held-out review case (period-01). The third body's two sentences score
# the same for the query: a tie, so the earliest window. Summed in the iteration order of a
# set of strings, the two sums differed in their last bit under some hash seeds, so another
# process showed the second sentence and a recorded cassette stopped matching.
_TIE_CASE = {
    "bodies": [
        "c1 Bluepeak Mining's user count rose 25% in 2021, from 60k users to 75k users. "
        "Bluepeak Mining 2021 annual report: user count 75k users, up from 60k users in 2020.",
        "c3 Bluepeak Mining's customer count rose 15% in 2021, from 40k customers to 46k "
        "customers. Bluepeak Mining 2021 annual report: customer count 46k customers, up from "
        "40k customers in 2020.",
        "c2 Bluepeak Mining's headcount rose 10% in 2016, from 140 staff to 154 staff. "
        "Bluepeak Mining 2016 annual report: headcount 154 staff, up from 140 staff in 2015.",
    ],
    "query": "Bluepeak Mining's user count rose 25% in 2021, from 60k users to 75k users. "
    "Bluepeak Mining 2021 annual report: user count 75k users, up from 60k users in 2020.",
}
_CHILD = """
import json, sys
from cortex_agents.tools._memory_query import PASSAGE_TOKENS
from cortex_agents.tools._passages import best_passages
from cortex_agents.tools._tokens import count_tokens, truncate_to_tokens
case = json.loads(sys.argv[1])
print(json.dumps(best_passages(case["bodies"], case["query"], PASSAGE_TOKENS,
                               count=count_tokens, cut=truncate_to_tokens)))
"""


def test_passages_are_the_same_in_every_process_whatever_the_hash_seed() -> None:
    shown = set()
    for seed in range(3):  # under the old summation seeds 0 and 2 showed the second sentence
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(_TIE_CASE)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        shown.add(out.stdout)
    assert len(shown) == 1, shown
    third = json.loads(shown.pop())[2]
    assert third.startswith("c2 Bluepeak Mining's headcount rose 10% in 2016")  # the tie's earliest
