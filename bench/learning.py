"""Benchmark of the rules that keep knowledge true: conflicts, consolidation, variables.

Runs the pure rules of ``lamarck.learning`` over a synthetic workload, in process:

(a) **Flipping facts.** Conflicts are planted: pairs of reversed mechanical lessons ("prefer B
    over A for T" / "prefer A over B for T", local against local and imported against local)
    and opposite free-text claims on one operation ("`X` works with Y" / "`X` does not work
    with Y"). The fact flipped after the older lesson was learned and may have flipped back
    since, so which side is true now is a coin toss. Around them sit neighbours in the same
    scope, operation and embedding neighbourhood that contradict nothing (agreeing lessons,
    mechanical lessons about other pairs) and decoys that would contradict but were learned
    where a critical variable differs, or in another project. Runs then test one side at a
    time (the real ``attribute`` rule over tool steps; a fifth of the runs teach nothing).
    Prints conflicts detected and settled correctly (goal ≥ 95 %), false conflicts, and the
    collateral changes (lessons contested or moved outside the planted conflicts; goal 0).
    Baseline side by side: "newest wins" (what a store without a test does).
(b) **Consolidation.** Facts (``bench.lesson_corpus``) learned as near-duplicates in several
    projects and promoted to global, with copies in other project scopes (which must not merge)
    and imported copies from other sources (grouped, never merged). Prints lessons before and
    after, false merges (two facts in one merge; goal 0), and recall@5 of each fact's query
    before and after (must not fall), with the distinct facts in the top five.
(c) **Variables.** Context variables of known importance; each gets 20 predictions across a
    difference in it alone, which fail at the variable's true rate. Prints the share whose
    learned class matches the truth (goal ≥ 90 %), per class, the binomial expectation of that
    share, and the fixed list's share as the baseline.

The last line is one JSON object of the figures. ``--quick`` runs in well under a minute.

Usage: ``python -m bench.learning [--quick] [--embedder hashing|minilm] [--seed N]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.lesson_corpus import TOOLS, lesson_sentences
from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.learning.attribution import attribute
from lamarck.learning.conflicts import (
    Conflict,
    apply_update,
    contest,
    detect_conflicts,
    settle_outcome,
)
from lamarck.learning.consolidation import apply_merge, collapse_groups, plan_consolidation
from lamarck.learning.knowledge_params import KnowledgeParams
from lamarck.learning.mechanical import MechanicalLesson
from lamarck.learning.outcomes import StepResult, ToolStep, Verdict
from lamarck.learning.params import LearningParams
from lamarck.learning.ranking import Candidate, rank
from lamarck.learning.variables import Importance, VariableImportanceLearner
from lamarck.node.embedding import make_embedder
from lamarck.node.minilm_onnx import OnnxParams

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PROJECT = "project:" + "a1" * 16
OTHER_PROJECT = "project:" + "b2" * 16
ENVIRONMENTS = ("linux", "macos", "windows", "wsl")
THINGS = (
    "the xdist plugin",
    "a frozen lockfile",
    "the system interpreter",
    "IPv6 only hosts",
    "a read-only home",
    "sparse checkouts",
    "the offline mirror",
    "cgroup v2",
)


def _row(lid: str, content: str, operation: str, **over: Any) -> LessonRow:
    base: dict[str, Any] = dict(
        id=lid,
        content=content,
        operation=operation,
        scope=PROJECT,
        status=LessonStatus.ACTIVE,
        confidence=0.5,
        created_at=T0,
        updated_at=T0,
        evidence=(f"o-{lid}",),
    )
    base.update(over)
    return LessonRow(**base)


def _mech(lid: str, prefer: str, avoid: str, target: str, **over: Any) -> LessonRow:
    m = MechanicalLesson(prefer=prefer, avoid=avoid, target=target)
    return _row(lid, m.content, prefer, tags=m.tags, **over)


# -- (a) conflicts ----------------------------------------------------------------------------


@dataclasses.dataclass
class Planted:
    """A planted conflict: its two lesson ids, which is newer, and which is true now."""

    pair: tuple[str, str]
    newer: str
    true: str
    kind: str
    ops: dict[str, str]  # lesson id -> the operation its advice runs
    works: dict[str, bool]  # operation -> whether it works now
    negated: str | None = None


def _conflict_world(
    n: int, neighbours: int, rng: random.Random
) -> tuple[list[LessonRow], list[Planted]]:
    """Planted conflicts with their neighbours and decoys."""
    rows: list[LessonRow] = []
    planted: list[Planted] = []
    for k in range(n):
        ctx = {"domain": "build", "environment": rng.choice(ENVIRONMENTS)}
        other_env = {**ctx, "environment": f"{ctx['environment']}-other"}
        a, b, target = f"shell:tool{k} --old", f"shell:tool{k} --new", f"target {k}"
        kind = ("local", "imported", "semantic")[k % 3]
        old_first = rng.random() < 0.5
        flipped_back = rng.random() < 0.5
        if kind == "semantic":
            thing = THINGS[k % len(THINGS)]
            pos = _row(
                f"c{k}-pos",
                f"`{b}` works with {thing} {k}",
                b,
                context=ctx,
                confidence=rng.uniform(0.4, 0.8),
            )
            neg = _row(
                f"c{k}-neg",
                f"`{b}` does not work with {thing} {k}",
                b,
                context=ctx,
                confidence=rng.uniform(0.4, 0.8),
            )
            older, newer = (pos, neg) if old_first else (neg, pos)
            true = older.id if flipped_back else newer.id
            works = {b: true == pos.id}
            rows += [pos, neg]
            planted.append(
                Planted(
                    (pos.id, neg.id),
                    newer.id,
                    true,
                    kind,
                    {pos.id: b, neg.id: b},
                    works,
                    negated=neg.id,
                )
            )
            op_for_neighbours = b
        else:
            one = _mech(f"c{k}-ba", b, a, target, context=ctx, confidence=rng.uniform(0.4, 0.8))
            two = _mech(f"c{k}-ab", a, b, target, context=ctx, confidence=rng.uniform(0.4, 0.8))
            if kind == "imported":
                two = dataclasses.replace(
                    two,
                    imported_from=f"lmk1source{k % 7}",
                    original_confidence=0.7,
                    content_hash=f"{k:064x}",
                    evidence=(),
                )
            older, newer = (one, two) if old_first else (two, one)
            true = older.id if flipped_back else newer.id
            works = {b: true == one.id, a: true == two.id}
            rows += [one, two]
            planted.append(
                Planted((one.id, two.id), newer.id, true, kind, {one.id: b, two.id: a}, works)
            )
            op_for_neighbours = b
        for i in range(neighbours):
            lid = f"n{k}-{i}"
            sort = i % 5
            if sort == 0:  # agrees with the positive side in other words
                rows.append(
                    _row(
                        lid,
                        f"`{op_for_neighbours}` is faster with -q, case {i}",
                        op_for_neighbours,
                        context=ctx,
                    )
                )
            elif sort == 1:  # a mechanical lesson about another pair on the same operation
                rows.append(
                    _mech(
                        lid, op_for_neighbours, f"shell:tool{k} --legacy-{i}", target, context=ctx
                    )
                )
            elif sort == 2:  # the reversed advice, learned where a critical variable differs
                rows.append(_mech(lid, a, b, target, context=other_env))
            elif sort == 3:  # the reversed advice, in another project
                rows.append(_mech(lid, a, b, target, context=ctx, scope=OTHER_PROJECT))
            else:  # a negated claim on the operation, learned in another environment
                rows.append(
                    _row(
                        lid,
                        f"`{op_for_neighbours}` does not work with {THINGS[i % 8]}",
                        op_for_neighbours,
                        context=other_env,
                    )
                )
    return rows, planted


def _run(planted: Planted, tested: str, teaches: bool) -> tuple[list[ToolStep], Verdict]:
    """A run following ``tested``'s advice, falling back to the other operation on failure."""
    op = planted.ops[tested]
    ok = planted.works[op]
    steps = [ToolStep(op, StepResult.OK if ok else StepResult.FAILED, "t")]
    others = [o for o in set(planted.ops.values()) if o != op]
    if not ok and others:
        steps.append(ToolStep(others[0], StepResult.OK, "t"))
        ok = True
    return steps, Verdict(passed=ok, teaches=teaches)


def bench_conflicts(
    n: int,
    neighbours: int,
    embedder: Embedder,
    kp: KnowledgeParams,
    lp: LearningParams,
    rng: random.Random,
    rounds: int,
) -> dict[str, float]:
    rows, planted = _conflict_world(n, neighbours, rng)
    vecs = embedder.embed([r.content for r in rows])
    embeddings = {r.id: vecs[i] for i, r in enumerate(rows)}
    started = time.perf_counter()
    conflicts = detect_conflicts(rows, embeddings, kp.conflicts, lp.context)
    detect_s = time.perf_counter() - started
    planted_by_pair = {tuple(sorted(p.pair)): p for p in planted}
    found = {c.pair: c for c in conflicts}
    detected = sum(1 for pair in planted_by_pair if pair in found)
    false_conflicts = sum(1 for pair in found if pair not in planted_by_pair)

    store = {r.id: r for r in rows}
    before = dict(store)
    touched: set[str] = set()
    for c in conflicts:
        for u in contest(c, store):
            touched.add(u.lesson_id)
            store[u.lesson_id] = apply_update(store[u.lesson_id], u, now=T0, max_evidence=64)
    open_conflicts: dict[tuple[str, str], Conflict] = dict(found)
    winners: dict[tuple[str, str], str] = {}
    reputation_events = 0
    for r in range(rounds):
        at = T0 + timedelta(hours=r + 1)
        for pair, c in sorted(open_conflicts.items()):
            p = planted_by_pair.get(pair)
            if p is None:  # a false conflict: test a random side against a coin-flip truth
                p = Planted(
                    pair,
                    pair[0],
                    pair[0],
                    "false",
                    {i: store[i].operation for i in pair},
                    {store[i].operation: rng.random() < 0.5 for i in pair},
                )
            tested = rng.choice(pair)
            steps, verdict = _run(p, tested, teaches=rng.random() >= 0.2)
            in_play = [(i, store[i].operation) for i in pair]
            attributions = attribute(in_play, steps, verdict)
            s = settle_outcome(
                c, store, attributions, outcome_id=f"o-{r}-{pair[0]}", at=at, p=kp.conflicts
            )
            if s is None:
                continue
            reputation_events += len(s.reputation)
            for u in s.updates:
                touched.add(u.lesson_id)
                store[u.lesson_id] = apply_update(store[u.lesson_id], u, now=at, max_evidence=64)
            winners[pair] = s.winner
        for pair in winners:
            open_conflicts.pop(pair, None)
    planted_ids = {i for p in planted for i in p.pair}
    collateral = len({i for i in touched if i not in planted_ids}) + sum(
        1 for i in store if i not in planted_ids and i not in touched and store[i] != before[i]
    )
    correct = sum(1 for pair, p in planted_by_pair.items() if winners.get(pair) == p.true)
    newest_correct = sum(1 for p in planted if p.newer == p.true)
    return {
        "conflicts_planted": len(planted),
        "lessons_in_store": len(rows),
        "conflicts_detected_share": detected / len(planted),
        "false_conflicts": false_conflicts,
        "conflicts_settled_correctly_share": correct / len(planted),
        "newest_wins_correct_share": newest_correct / len(planted),
        "settled_vs_newest_wins_ratio": (correct / max(1, newest_correct)),
        "collateral_changes": collateral,
        "reputation_events": reputation_events,
        "detect_ms": detect_s * 1000,
    }


# -- (b) consolidation --------------------------------------------------------------------------

_BACKTICK = re.compile(r"`([^`]+)`")


_TOOL_NAMES = tuple(t.name for t in TOOLS)


def _operation_of(sentence: str) -> str:
    """A coarse operation: the tool of the first command, else the first tool the text names."""
    m = _BACKTICK.search(sentence)
    if m and m.group(1).split():
        return f"shell:{m.group(1).split()[0].lower()}"
    words = set(re.findall(r"[a-z0-9_.-]+", sentence.lower()))
    tool = next((t for t in _TOOL_NAMES if t in words), "unknown")
    return f"shell:{tool}"


_VARIANTS = ("{s}", "{s}.", "Note: {s}", "In this repo: {s}", "{s} (seen in CI)")


def _query_of(sentence: str, rng: random.Random) -> str:
    """A task-like query: most of the fact's words, a few dropped, in the agent's phrasing."""
    words = sentence.split()
    kept = [w for w in words if rng.random() > 0.3] or words[:1]
    return "how do I " + " ".join(kept)


def _recall(
    active: Sequence[LessonRow],
    embeddings: dict[str, np.ndarray],
    queries: np.ndarray,
    groups: Sequence[Any],
    lp: LearningParams,
    pool: int,
) -> list[list[str]]:
    """Top lessons per query: the ``pool`` nearest by cosine, re-ranked, groups collapsed."""
    ids = [r.id for r in active]
    matrix = np.stack([embeddings[i] for i in ids])
    sims = queries @ matrix.T
    out = []
    for qi in range(queries.shape[0]):
        top = np.argsort(-sims[qi])[:pool]
        cands = [Candidate(ids[j], float(sims[qi, j]), 1.0, active[j].confidence, 0.0) for j in top]
        ranked = [r.key for r in rank(cands, lp.lesson)]
        out.append(collapse_groups(ranked, groups)[: lp.lesson.recall_limit])
    return out


def bench_consolidation(
    facts: int,
    embedder: Embedder,
    kp: KnowledgeParams,
    lp: LearningParams,
    rng: random.Random,
    seed: int,
) -> dict[str, float]:
    sentences = lesson_sentences(facts, seed=seed)
    rows: list[LessonRow] = []
    fact_of: dict[str, int] = {}
    for f, s in enumerate(sentences):
        op = _operation_of(s)
        copies = rng.randint(1, 4)
        for c in range(copies):  # learned in c projects, promoted to global
            lid = f"f{f}-g{c}"
            rows.append(
                _row(
                    lid,
                    _VARIANTS[c % len(_VARIANTS)].format(s=s),
                    op,
                    scope="global",
                    confidence=round(rng.uniform(0.5, 0.9), 3),
                    confirmations=rng.randint(0, 5),
                    confirmed_projects=(f"p{c}",),
                    evidence=tuple(f"o-{lid}-{e}" for e in range(rng.randint(1, 20))),
                )
            )
            fact_of[lid] = f
        if rng.random() < 0.3:  # the same lesson in this project's scope: never merged
            lid = f"f{f}-p"
            rows.append(_row(lid, s, op, scope=PROJECT, confidence=0.5))
            fact_of[lid] = f
        if rng.random() < 0.2:  # an imported copy: grouped, never merged
            lid = f"f{f}-i"
            rows.append(
                _row(
                    lid,
                    s + ".",
                    op,
                    scope="global",
                    confidence=0.45,
                    imported_from=f"lmk1src{f % 5}",
                    evidence=(),
                )
            )
            fact_of[lid] = f
    vecs = embedder.embed([r.content for r in rows])
    embeddings = {r.id: vecs[i] for i, r in enumerate(rows)}
    queries = embedder.embed([_query_of(s, rng) for s in sentences])

    def scores(active: list[LessonRow], groups: Sequence[Any], pool: int) -> tuple[float, float]:
        tops = _recall(active, embeddings, queries, groups, lp, pool)
        hits = sum(1 for f, top in enumerate(tops) if any(fact_of[i] == f for i in top))
        distinct = sum(len({fact_of[i] for i in top}) for top in tops) / len(tops)
        return hits / len(tops), distinct

    pool = lp.lesson.candidate_pool
    before_recall, before_distinct = scores(rows, (), len(rows))
    before_pool, _ = scores(rows, (), pool)
    started = time.perf_counter()
    plan = plan_consolidation(
        rows,
        embeddings,
        kp.consolidation,
        lp.context,
        negation_markers=kp.conflicts.negation_markers,
    )
    plan_s = time.perf_counter() - started
    store = {r.id: r for r in rows}
    for m in plan.merges:
        for new in apply_merge(store, m, now=T0):
            store[new.id] = new
    active = [r for r in store.values() if r.status is LessonStatus.ACTIVE]
    after_recall, after_distinct = scores(active, plan.groups, len(rows))
    after_pool, _ = scores(active, plan.groups, pool)
    false_merges = sum(
        1 for m in plan.merges if len({fact_of[i] for i in (m.survivor, *m.predecessors)}) > 1
    )
    cross_scope = sum(
        1 for m in plan.merges if len({store[i].scope for i in (m.survivor, *m.predecessors)}) > 1
    )
    merged_imports = sum(
        1 for m in plan.merges for i in (m.survivor, *m.predecessors) if store[i].imported_from
    )
    max_evidence = max(len(r.evidence) for r in active)
    return {
        "facts": facts,
        "lessons_before": len(rows),
        "lessons_after": len(active),
        "merges": len(plan.merges),
        "recall_groups": len(plan.groups),
        "false_merges": false_merges,
        "cross_scope_merges": cross_scope,
        "merged_imported_lessons": merged_imports,
        "max_evidence_after": max_evidence,
        "recall_at_5_before": before_recall,
        "recall_at_5_after": after_recall,
        "recall_at_5_ratio": after_recall / before_recall if before_recall else math.nan,
        "recall_at_5_pool_before": before_pool,
        "recall_at_5_pool_after": after_pool,
        "recall_at_5_pool_ratio": after_pool / before_pool if before_pool else math.nan,
        "distinct_facts_in_top5_before": before_distinct,
        "distinct_facts_in_top5_after": after_distinct,
        "consolidation_plan_ms": plan_s * 1000,
    }


# -- (c) variables ------------------------------------------------------------------------------

# Variable -> (true class, rate at which a prediction across a difference in it fails).
_RATES = {
    Importance.CRITICAL: 0.9,
    Importance.IMPORTANT: 0.55,
    Importance.MINOR: 0.3,
    Importance.NEGLIGIBLE: 0.05,
}
TRUTH: dict[str, Importance] = {
    "domain": Importance.CRITICAL,
    "environment": Importance.CRITICAL,
    "authentication": Importance.NEGLIGIBLE,  # the fixed list says critical; evidence says not
    "tools": Importance.IMPORTANT,
    "scale": Importance.NEGLIGIBLE,
    "users": Importance.MINOR,
    "timing": Importance.NEGLIGIBLE,
    "constraints.region": Importance.IMPORTANT,
    "constraints.gpu": Importance.CRITICAL,
    "constraints.shell": Importance.MINOR,
    "constraints.locale": Importance.NEGLIGIBLE,
    "constraints.editor": Importance.NEGLIGIBLE,
}
_BASE_CTX: dict[str, Any] = {
    "domain": "build",
    "environment": "linux",
    "tools": ["pytest"],
    "scale": "small",
    "users": "team",
    "timing": "night",
    "constraints": {
        "authentication": "token",
        "region": "eu",
        "gpu": "none",
        "shell": "bash",
        "locale": "en",
        "editor": "vim",
    },
}


def _differ(var: str) -> dict[str, Any]:
    ctx = json.loads(json.dumps(_BASE_CTX))
    if var.startswith("constraints.") or var == "authentication":
        key = var.removeprefix("constraints.")
        ctx["constraints"][key] = ctx["constraints"][key] + "-other"
    elif var == "tools":
        ctx["tools"] = ["nox"]
    else:
        ctx[var] = ctx[var] + "-other"
    return ctx


def _binomial_in_band(n: int, p: float, lo: float | None, hi: float | None) -> float:
    """P(lo < k/n <= hi) for k ~ Binomial(n, p) (None: unbounded)."""
    total = 0.0
    for k in range(n + 1):
        rate = k / n
        if (lo is None or rate > lo) and (hi is None or rate <= hi):
            total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
    return total


def bench_variables(
    observations: int, trials: int, kp: KnowledgeParams, lp: LearningParams, rng: random.Random
) -> dict[str, float]:
    vp = kp.variables
    bands = {
        Importance.CRITICAL: (vp.critical_error_rate, None),
        Importance.IMPORTANT: (vp.important_error_rate, vp.critical_error_rate),
        Importance.MINOR: (vp.minor_error_rate, vp.important_error_rate),
        Importance.NEGLIGIBLE: (None, vp.minor_error_rate),
    }
    expected = sum(
        _binomial_in_band(observations, _RATES[c], *bands[c]) for c in TRUTH.values()
    ) / len(TRUTH)
    matches = 0
    per_class: dict[Importance, list[int]] = {c: [0, 0] for c in Importance}
    differ = {v: _differ(v) for v in TRUTH}
    for _ in range(trials):
        learner = VariableImportanceLearner()
        for var, cls in TRUTH.items():
            for _ in range(observations):
                held = rng.random() >= _RATES[cls]
                learner = learner.observe(_BASE_CTX, differ[var], held=held, context=lp.context)
        for var, cls in TRUTH.items():
            ok = learner.importance(var, vp, lp.context) is cls
            matches += ok
            per_class[cls][0] += ok
            per_class[cls][1] += 1
    fixed = VariableImportanceLearner()
    fixed_share = sum(fixed.importance(v, vp, lp.context) is c for v, c in TRUTH.items()) / len(
        TRUTH
    )
    share = matches / (trials * len(TRUTH))
    out: dict[str, float] = {
        "variables": len(TRUTH),
        "observations_each": observations,
        "variable_trials": trials,
        "variable_class_match_share": share,
        "variable_class_match_expected": expected,
        "fixed_list_match_share": fixed_share,
        "learned_vs_fixed_ratio": share / fixed_share if fixed_share else math.nan,
    }
    for c, (ok, total) in per_class.items():
        if total:
            out[f"variable_match_{c.value}"] = ok / total
    return out


# -- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the three parts, print the figures and the closing JSON line."""
    parser = argparse.ArgumentParser(description="Benchmark the rules that keep knowledge true.")
    parser.add_argument("--quick", action="store_true", help="smaller workload, well under 1 min")
    parser.add_argument("--embedder", choices=("hashing", "minilm", "auto"), default="hashing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conflicts", type=int, default=None, help="default 600, quick 150")
    parser.add_argument("--neighbours", type=int, default=10, help="per planted conflict")
    parser.add_argument("--facts", type=int, default=None, help="default 2000, quick 300")
    parser.add_argument("--observations", type=int, default=20, help="per variable")
    parser.add_argument("--trials", type=int, default=None, help="default 500, quick 100")
    parser.add_argument("--rounds", type=int, default=6, help="test rounds per conflict")
    args = parser.parse_args(argv)
    n_conflicts = args.conflicts or (150 if args.quick else 600)
    n_facts = args.facts or (300 if args.quick else 2000)
    trials = args.trials or (100 if args.quick else 500)
    kp, lp = KnowledgeParams(), LearningParams()
    embedder = make_embedder(args.embedder, onnx=OnnxParams())
    started = time.perf_counter()

    figures: dict[str, Any] = {"embedder": embedder.name}
    c = bench_conflicts(
        n_conflicts, args.neighbours, embedder, kp, lp, random.Random(args.seed), args.rounds
    )
    figures.update(c)
    print(
        f"(a) flipping facts: {c['conflicts_planted']} conflicts among "
        f"{c['lessons_in_store']} lessons; detected {c['conflicts_detected_share']:.1%}, "
        f"false {c['false_conflicts']}; settled correctly "
        f"{c['conflicts_settled_correctly_share']:.1%} (goal >= 95 %) vs newest-wins "
        f"{c['newest_wins_correct_share']:.1%}; collateral changes {c['collateral_changes']} "
        f"(goal 0); reputation events {c['reputation_events']}"
    )
    b = bench_consolidation(n_facts, embedder, kp, lp, random.Random(args.seed + 1), args.seed)
    figures.update(b)
    print(
        f"(b) consolidation: {b['lessons_before']} -> {b['lessons_after']} lessons "
        f"({b['merges']} merges, {b['recall_groups']} recall groups, false merges "
        f"{b['false_merges']}, cross-scope {b['cross_scope_merges']}, imported merged "
        f"{b['merged_imported_lessons']}); recall@5 {b['recall_at_5_before']:.3f} -> "
        f"{b['recall_at_5_after']:.3f} (ratio {b['recall_at_5_ratio']:.3f}, must be >= 1; with "
        f"the {lp.lesson.candidate_pool}-candidate pool {b['recall_at_5_pool_before']:.3f} -> "
        f"{b['recall_at_5_pool_after']:.3f}); "
        f"distinct facts in top 5 {b['distinct_facts_in_top5_before']:.2f} -> "
        f"{b['distinct_facts_in_top5_after']:.2f}"
    )
    v = bench_variables(args.observations, trials, kp, lp, random.Random(args.seed + 2))
    figures.update(v)
    per = ", ".join(
        f"{k.removeprefix('variable_match_')} {val:.1%}"
        for k, val in v.items()
        if k.startswith("variable_match_")
    )
    print(
        f"(c) variables: {v['variable_class_match_share']:.1%} of {v['variables']} variables "
        f"classed right after {v['observations_each']} observations each (goal >= 90 %; "
        f"binomial expectation {v['variable_class_match_expected']:.1%}; {per}); fixed list "
        f"{v['fixed_list_match_share']:.1%}"
    )
    figures["wall_s"] = time.perf_counter() - started
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
