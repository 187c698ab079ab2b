"""Retrieval evaluation: labelled cases, metrics, the configurations compared, the dev set.

``tools/eval_retrieval.py`` is the command; this package is what it (and the
tests that hold the shipped defaults to a recall floor) are made of:

* :mod:`~cortex_agents.evaluation._cases` — case files (snapshot, origin, query, relevant);
* :mod:`~cortex_agents.evaluation._metrics` — recall@k, nDCG@k, MRR, defined there;
* :mod:`~cortex_agents.evaluation._configs` — ``shipped-reviewer`` (through the tool's
  own code) and the priors, single axes and scorers it is compared with;
* :mod:`~cortex_agents.evaluation._devset` — the generated, labelled dev set (dev and
  held-out splits), from the text bank in :mod:`~cortex_agents.evaluation._topics`;
* :mod:`~cortex_agents.evaluation._multihop` — real-text cases built from HotpotQA
  and MuSiQue records (four families, dev and held-out halves);
* :mod:`~cortex_agents.evaluation._report` — scoring every configuration on every case.
"""

from cortex_agents.evaluation._cases import LoadedCase, load_cases, read_cases
from cortex_agents.evaluation._configs import Config, build_configs
from cortex_agents.evaluation._devset import FAMILIES, SPLITS, Case, generate_cases
from cortex_agents.evaluation._metrics import ndcg_at, recall_at, reciprocal_rank, score_ranking
from cortex_agents.evaluation._multihop import MULTIHOP_FAMILIES, build_cases, load_records
from cortex_agents.evaluation._report import evaluate, html_chart

__all__ = [
    "FAMILIES",
    "MULTIHOP_FAMILIES",
    "SPLITS",
    "Case",
    "Config",
    "LoadedCase",
    "build_cases",
    "build_configs",
    "evaluate",
    "generate_cases",
    "html_chart",
    "load_cases",
    "load_records",
    "ndcg_at",
    "read_cases",
    "recall_at",
    "reciprocal_rank",
    "score_ranking",
]
