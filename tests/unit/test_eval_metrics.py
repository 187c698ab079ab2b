"""The retrieval harness's metrics, case files and dev-set generator, on tiny hand-computed cases."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.evaluation import (
    FAMILIES,
    generate_cases,
    load_cases,
    ndcg_at,
    read_cases,
    recall_at,
    reciprocal_rank,
    score_ranking,
)
from cortex_agents.evaluation._topics import ASPECTS, HELDOUT_ASPECTS
from cortex_agents.memory import default_extractor


def test_one_relevant_node_at_rank_three():
    scores = score_ranking(["a", "b", "c", "d"], ["c"])
    assert scores["recall@3"] == 1.0
    assert scores["ndcg@5"] == pytest.approx(1 / math.log2(4))  # ideal DCG is 1
    assert scores["mrr"] == pytest.approx(1 / 3)


def test_two_relevant_nodes_one_in_the_top_three():
    ranked, relevant = ["x", "a", "y", "b"], ["a", "b"]
    assert recall_at(ranked, relevant, 3) == 0.5  # 1 of min(2, 3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert ndcg_at(ranked, relevant, 5) == pytest.approx(dcg / (1 + 1 / math.log2(3)))
    assert reciprocal_rank(ranked, relevant) == 0.5


def test_recall_caps_the_denominator_at_k():
    assert recall_at(["a", "b", "c"], ["a", "b", "c", "d"], 3) == 1.0
    assert ndcg_at(["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e", "f"], 5) == 1.0


def test_nothing_found_scores_zero_and_empty_relevant_is_refused():
    assert score_ranking(["x", "y"], ["a"]) == {"recall@3": 0.0, "ndcg@5": 0.0, "mrr": 0.0}
    assert score_ranking([], ["a"])["mrr"] == 0.0
    with pytest.raises(ValueError, match="empty"):
        recall_at(["a"], [], 3)


def _one_case():
    return generate_cases("dev")[0].to_json()


@pytest.mark.parametrize(
    ("mutate", "location"),
    [
        (lambda c: c.update(relevant=[]), "cases[0].relevant"),
        (lambda c: c.update(relevant=["analyst-c1", "ghost"]), "cases[0].relevant[1]"),
        (lambda c: c.update(origin="ghost"), "cases[0].origin"),
        (lambda c: c.update(relevant=[c["origin"]]), "cases[0].relevant[0]"),
        (lambda c: c.update(query=""), "cases[0].query"),
        (lambda c: c.pop("snapshot"), "cases[0].snapshot"),
        (lambda c: c["snapshot"].update(schema_version="9"), "cases[0].snapshot"),
    ],
)
def test_bad_cases_are_rejected_with_their_location(mutate, location):
    case = _one_case()
    broken = copy.deepcopy(case)
    mutate(broken)
    with pytest.raises(InvalidArgument) as caught:
        read_cases([case, broken] if location.startswith("cases[1]") else [broken])
    assert caught.value.field == location


def test_case_file_errors_name_the_file_problem(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(InvalidArgument, match="not JSON: line 1"):
        load_cases(path)
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(InvalidArgument) as caught:
        load_cases(path)
    assert caught.value.field == "cases"
    case = _one_case()
    path.write_text(json.dumps([case]), encoding="utf-8")
    [loaded] = load_cases(path)
    assert loaded.relevant == tuple(case["relevant"]) and loaded.family == case["family"]


def test_the_dev_set_is_deterministic_and_covers_every_family_per_split():
    first = [c.to_json() for c in generate_cases("all")]
    assert first == [c.to_json() for c in generate_cases("all")]
    for split in ("dev", "heldout"):
        cases = [c for c in first if c["split"] == split]
        assert {c["family"] for c in cases} == set(FAMILIES)
        assert len({c["width"] for c in cases}) >= 5  # several fan-out widths
    assert len({c["name"] for c in first}) == len(first)


def _bodies(case):
    return {n["id"]: default_extractor(n["output"]) for n in case["snapshot"]["nodes"]}


def test_paraphrase_questions_share_no_word_with_what_they_ask_for():
    tokens = lambda text: set(re.findall(r"\w+", text.casefold()))  # noqa: E731
    checked = 0
    for case in (c.to_json() for c in generate_cases("all")):
        if case["style"] != "paraphrase":
            continue
        checked += 1
        bodies = _bodies(case)
        for node_id in case["relevant"]:
            assert not tokens(case["query"]) & tokens(bodies[node_id].body_text), case["name"]
    assert checked >= 80 + 2 * 55  # the paraphrase family, and half of three mixed ones


def test_labels_come_from_construction():
    for case in (c.to_json() for c in generate_cases("all")):
        nodes = {n["id"]: n for n in case["snapshot"]["nodes"]}
        assert nodes[case["origin"]]["status"] == "running"
        assert all(nodes[r]["kind"] == "analyst" for r in case["relevant"])
        if case["family"] == "rereview":  # the part's first analyst and the follow-up analyst
            assert len(case["relevant"]) == 2 and case["relevant"][1].startswith("rewriter:")
        else:
            assert len(case["relevant"]) == 1


def test_heldout_texts_never_appear_in_the_dev_split():
    heldout = [a for a in ASPECTS if a.name in HELDOUT_ASPECTS]
    dev_text = json.dumps([c.to_json() for c in generate_cases("dev")])
    for aspect in heldout:
        assert aspect.finding.split("{s}")[-1][:40] not in dev_text
