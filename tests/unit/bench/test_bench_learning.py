"""bench/learning.py on a tiny workload: the figures it prints are computed as documented."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from lamarck.learning.knowledge_params import KnowledgeParams
from lamarck.learning.params import LearningParams
from lamarck.node.embedding import HashingEmbedder

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.learning import bench_conflicts, bench_consolidation, bench_variables

KP, LP = KnowledgeParams(), LearningParams()


def test_planted_conflicts_are_settled_by_truth_and_touch_nothing_else() -> None:
    c = bench_conflicts(12, 5, HashingEmbedder(), KP, LP, random.Random(0), rounds=6)
    assert c["conflicts_detected_share"] == 1.0 and c["false_conflicts"] == 0
    assert c["conflicts_settled_correctly_share"] >= 0.95
    assert c["collateral_changes"] == 0
    assert c["reputation_events"] == 4  # one per imported-vs-local conflict (every third)


def test_consolidation_never_crosses_scopes_or_merges_imports_and_bounds_evidence() -> None:
    b = bench_consolidation(60, HashingEmbedder(), KP, LP, random.Random(1), 0)
    assert b["lessons_after"] < b["lessons_before"]
    assert b["cross_scope_merges"] == 0 and b["merged_imported_lessons"] == 0
    assert b["max_evidence_after"] <= KP.consolidation.evidence_kept
    assert b["distinct_facts_in_top5_after"] >= b["distinct_facts_in_top5_before"]


def test_variable_learning_beats_the_fixed_list() -> None:
    v = bench_variables(20, 20, KP, LP, random.Random(2))
    assert v["variable_class_match_share"] > v["fixed_list_match_share"]
