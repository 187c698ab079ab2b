"""The real-text families: HotpotQA and MuSiQue records built into claim-review cases."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.evaluation import read_cases
from cortex_agents.evaluation._multihop import (
    MULTIHOP_FAMILIES,
    assign_splits,
    build_cases,
    load_records,
    parse_records,
)
from cortex_agents.memory import default_extractor

ROOT = Path(__file__).resolve().parents[2]
DATA = [
    ROOT / "data" / "multihop" / "hotpotqa_train_devsplit.json",
    ROOT / "data" / "multihop" / "musique_train_devsplit.json",
]


def hotpot(**changes):
    record = {
        "_id": "h1",
        "type": "bridge",
        "question": "Which city hosts the club whose stadium is Érable Park?",
        "context": [
            ["Érable Park", ["Érable Park is the stadium of Fenwick FC.", " It opened in 1911."]],
            ["Fenwick FC", ["Fenwick FC is a club.", " It is based in Lyonesse."]],
            ["Other", ["Nothing here."]],
        ],
        "supporting_facts": [["Fenwick FC", 1], ["Érable Park", 0]],
    }
    record.update(changes)
    return record


def musique(**changes):
    paragraphs = [
        {"idx": 0, "title": "Bubye River", "paragraph_text": "The Bubye River is in Zimbabwe.",
         "is_supporting": True},
        {"idx": 1, "title": "Victoria Falls", "paragraph_text": "Victoria Falls lies in Zimbabwe.",
         "is_supporting": True},
        {"idx": 2, "title": "Nile", "paragraph_text": "The Nile is long.", "is_supporting": False},
        {"idx": 3, "title": "Nile", "paragraph_text": "The Nile floods.", "is_supporting": False},
    ]  # fmt: skip
    record = {
        "id": "2hop__1_2",
        "question": "What waterfall is in the country of the Bubye River?",
        "paragraphs": paragraphs,
        "question_decomposition": [
            {"id": 1, "question": "Bubye River >> country", "paragraph_support_idx": 0},
            {"id": 2, "question": "waterfall in #1", "paragraph_support_idx": 1},
        ],
        "answerable": True,
    }
    record.update(changes)
    return record


def nodes_of(case):
    return {n["id"]: n for n in case.snapshot["nodes"]}


def preds(case, node_id):
    return sorted(e["source"] for e in case.snapshot["edges"] if e["target"] == node_id)


def test_each_format_is_recognised_per_record_and_bridge_hops_are_ordered():
    records, skipped = parse_records([hotpot(), musique(), {"foo": 1}, 7], "mixed.json")
    assert [r.source for r in records] == ["hotpotqa", "musique"]
    assert [s.where for s in skipped] == ["mixed.json[2]", "mixed.json[3]"]
    assert "neither HotpotQA" in skipped[0].reason
    h, m = records
    # the park's paragraph names the club (the bridge entity): it is the first hop
    assert [h.paragraphs[p].title for p in h.hops] == ["Érable Park", "Fenwick FC"]
    assert h.depends == ((), (0,))
    assert [m.paragraphs[p].title for p in m.hops] == ["Bubye River", "Victoria Falls"]
    assert m.depends == ((), (0,))  # "#1" in the second step's question
    comparison = parse_records([hotpot(type="comparison")])[0][0]
    assert comparison.depends == ((), ())


def test_duplicate_titles_missing_gold_and_unanswerable_records():
    context = [
        ["Twin", ["One sentence only."]],
        ["Twin", ["First.", " Second: the cited one."]],
        ["Lone", ["Lone text."]],
    ]
    facts = [["Twin", 1], ["Ghost", 0], ["Lone", 0]]
    [record], _ = parse_records([hotpot(context=context, supporting_facts=facts)])
    assert sorted(record.hops) == [1, 2]  # the second "Twin": the one with a sentence 1
    assert any("'Ghost' names no paragraph" in note for note in record.notes)
    _, skipped = parse_records([hotpot(supporting_facts=[["Ghost", 0]])])
    assert "no supporting fact names a paragraph" in skipped[0].reason
    _, skipped = parse_records([musique(answerable=False)])
    assert "unanswerable" in skipped[0].reason
    # a decomposition step naming no paragraph: the supporting flags still give the gold
    steps = [{"id": 1, "question": "x", "paragraph_support_idx": 99}]
    [record], _ = parse_records([musique(question_decomposition=steps)])
    assert record.hops == (0, 1) and record.notes


def test_json_lines_files_load_and_unreadable_ones_are_refused(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (musique(), hotpot())) + "\n", "utf-8")
    records, skipped = load_records(path)
    assert [r.record_id for r in records] == ["2hop__1_2", "h1"] and not skipped
    path.write_text("{not json\n", "utf-8")
    with pytest.raises(InvalidArgument, match="neither JSON nor JSON lines: line 1"):
        load_records(path)
    with pytest.raises(InvalidArgument, match="cannot be read"):
        load_records(tmp_path / "missing.json")


def test_the_four_families_have_the_shapes_the_stages_record():
    records, _ = parse_records([musique()])
    cases = {c.family: c for c in build_cases(records)}
    assert set(cases) == set(MULTIHOP_FAMILIES)
    read_cases([c.to_json() for c in cases.values()])  # every case loads
    for case in cases.values():
        nodes = nodes_of(case)
        assert nodes[case.origin]["status"] == "running"
        assert case.query == records[0].question
        for node_id in case.relevant:
            value = nodes[node_id]["output"]["value"]
            assert nodes[node_id]["kind"] == "analyst" and value["parsed"] is True
            assert set(value) == {"claim_ref", "finding", "evidence", "parsed"}
        # finding = the paragraph, evidence = its title
        findings = {nodes[r]["output"]["value"]["finding"] for r in case.relevant}
        assert findings == {"The Bubye River is in Zimbabwe.", "Victoria Falls lies in Zimbabwe."}
    flat, chain = cases["mh-flat"], cases["mh-chain"]
    first, second = chain.relevant
    assert preds(flat, flat.relevant[1]) == ["planner"]
    assert preds(chain, second) == [first]  # the later hop runs on the earlier one's finding
    assert preds(chain, "merge") == sorted(  # the merge follows the branches' ends only
        n for n in nodes_of(chain) if n.startswith("analyst-") and n != first
    )
    chain_nodes = nodes_of(chain)
    assert chain_nodes[first]["completed_at"] <= chain_nodes[second]["captured_at"]
    repair = cases["mh-repair"]
    assert repair.origin == "rewriter:re-review"
    assert repair.relevant[0].startswith("analyst-") and repair.relevant[1].startswith(
        "rewriter:followup-"
    )
    assert preds(repair, repair.relevant[1]) == ["rewriter"]
    assert nodes_of(repair)["reviewer"]["output"]["value"]["verdict"] == "gap"
    history = cases["mh-history"]
    old = [n for n in nodes_of(history) if n.startswith("r1.")]
    assert old and not set(history.relevant) & set(old)
    bodies = [default_extractor(n["output"]).body_text for n in nodes_of(history).values()
              if n["kind"] == "analyst"]  # fmt: skip
    assert any(count > 1 for count in Counter(bodies).values())  # earlier copies compete


def test_building_is_deterministic_and_ids_say_nothing_about_gold():
    records, _ = parse_records([hotpot(), musique()])
    first = [c.to_json() for c in build_cases(records)]
    assert first == [c.to_json() for c in build_cases(records)]
    assert json.dumps(first, ensure_ascii=False).count("Érable Park") > 0  # unicode kept
    for case in first:
        assert all(node["id"].isascii() for node in case["snapshot"]["nodes"])
    with pytest.raises(InvalidArgument):
        build_cases(records, families=("mh-flat", "nonsense"))


def test_the_committed_records_parse_whole_and_split_in_halves_per_source():
    records = []
    for path in DATA:
        found, skipped = load_records(path)
        assert not skipped
        records += found
    assert Counter(r.source for r in records) == {"hotpotqa": 53, "musique": 54}
    splits = assign_splits(records)
    by = Counter((source, split) for (source, _), split in splits.items())
    assert by == {("hotpotqa", "dev"): 27, ("hotpotqa", "heldout"): 26,
                  ("musique", "dev"): 27, ("musique", "heldout"): 27}  # fmt: skip
    dev = build_cases(records, split="dev")
    heldout = build_cases(records, split="heldout")
    assert len(dev) == 54 * 4 and len(heldout) == 53 * 4
    assert not {c.name for c in dev} & {c.name for c in heldout}
