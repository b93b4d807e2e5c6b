"""What a topic gate by meaning would cost: a measurement, not a filter.

The idea (inverting the burden): a sentence whose *meaning* is about the agent's authority
(permissions, approval, consent, prompts, acting without a human) passes only if the
structure reads it as careful; anything else on that topic is quarantined. "About authority"
is a broader concept than "is a claim", so it should generalise to fresh phrasings better;
the price is paid by honest lessons on that topic that the grammar does not read as careful.

The topic model is a logistic regression over MiniLM unit vectors (``bench/train_autonomy.py``'s
``fit``), trained on the TUNED split only: on topic (1) are the claims and every honest
sentence the structure reads as careful; off topic (0) are the other honest sentences and
lessons, except incident reports and negated autonomy, which are about authority without
being careful in form and so are left out of training (their false positives are measured).
Tune figures are out-of-fold (5 folds over whole templates); held-out figures use the model
fitted on the whole tuned split.

The gate runs after today's filter (structure + meaning classifier, its packaged weights):
a record it accepts is quarantined when one of the texts its meaning check scores (the
content unless a sentence is careful, and every undecided sentence with permission
vocabulary) has topic probability >= t, and, in the second grid, the meaning classifier's
claim probability >= c too (a wider quarantine band restricted to the topic). The packaged
classifier was fitted on the whole tuned split, so its tune figures are in-sample.

Run: ``.venv/bin/python bench/autonomy_gate.py [--vectors-cache /tmp/autonomy_vectors.npz]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.autonomy_corpus import DEFAULT_PATH, CorpusItem, load_corpus
from bench.filters import BenchView
from bench.train_autonomy import FOLDS, VectorCache, _EmptyView, fit, record_of
from lamarck.node.embedding import make_minilm
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.policy.autonomy import (
    AutonomyFilter,
    AutonomyParams,
    MeaningModel,
    Polarity,
)
from lamarck.policy.filters import VerdictKind

# Left out of the topic model's training: about authority, careful in intent, not in form.
AMBIGUOUS = frozenset({"incident", "negated_autonomy"})
TOPIC_L2 = 1.0
TOPIC_GRID = (0.3, 0.5, 0.7, 0.9, 0.95)
CLAIM_GRID = (0.05, 0.2, 0.5)


@dataclass
class Row:
    """One corpus record as the filter reads it."""

    item: CorpusItem
    accepted: bool  # today's filter (structure + meaning) accepts it
    inputs: list[tuple[str, bool]]  # the texts the meaning check scores, with the weak hint
    sentences: list[tuple[str, Polarity]]


def wave(item: CorpusItem) -> str:
    head = item.template.split(":", 1)[0]
    return head if head in ("w3", "w4", "w5") else "w12"


def main(argv: list[str] | None = None) -> int:
    """Train the topic model on the tuned split; print the gate's cost on every split."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--vectors-cache", type=Path, default=None)
    parser.add_argument("--detail", type=float, default=0.5, help="topic threshold to break down")
    args = parser.parse_args(argv)

    params = AutonomyParams()
    structure = AutonomyFilter(params)
    embedder = make_minilm(params=OnnxParams())
    cache = VectorCache(embedder, args.vectors_cache)
    model = MeaningModel(embedder, params)
    semantic = AutonomyFilter(params, model, embed_missing=True)
    items = load_corpus(args.corpus)

    read = []
    for it in items:
        judgement = structure.judge(record_of(it.text), _EmptyView())
        read.append((it, list(judgement.evidence)))
    inputs = [structure.meaning_inputs(record_of(it.text), ev) for it, ev in read]
    cache.embed(
        [it.text for it, _ in read]
        + [e.sentence for _, ev in read for e in ev if e.cue]
        + [t for texts in inputs for t, _ in texts]
    )
    view = BenchView(cache.vectors)
    rows: list[Row] = []
    for (it, evidence), texts in zip(read, inputs, strict=True):
        verdict = semantic.check(record_of(it.text), view)
        sentences = [(e.sentence, e.polarity) for e in evidence if e.cue]
        rows.append(Row(it, verdict.kind is VerdictKind.ACCEPT, texts, sentences))

    samples: list[tuple[str, int, str]] = []
    for row in rows:
        it = row.item
        if it.split != "tune":
            continue
        if it.label == "claim":
            samples.append((it.text, 1, it.template))
            continue
        careful = any(p is Polarity.CAREFUL for _, p in row.sentences)
        for sentence, polarity in row.sentences:
            if polarity is Polarity.CAREFUL:
                samples.append((sentence, 1, it.template))
            elif polarity is Polarity.NONE and it.category not in AMBIGUOUS:
                samples.append((sentence, 0, it.template))
        if it.category not in AMBIGUOUS and not careful:
            samples.append((it.text, 0, it.template))
    samples = list(dict.fromkeys(samples))
    x = np.stack([np.append(cache[t], 1.0) for t, _, _ in samples])
    y = np.array([float(label) for _, label, _ in samples])
    groups = sorted({g for *_, g in samples})
    fold_of = {g: i % FOLDS for i, g in enumerate(groups)}
    folds = np.array([fold_of[g] for *_, g in samples])
    by_fold = [fit(x[folds != k], y[folds != k], TOPIC_L2) for k in range(FOLDS)]
    whole = fit(x, y, TOPIC_L2)
    print(f"topic model: {len(samples)} tuned samples ({int(y.sum())} on topic), l2 {TOPIC_L2}")

    def topic(text: str, item: CorpusItem) -> float:
        # A tuned record's template was held out of its fold's fit; a template never trained
        # on (held-out split, or a category left out) is read by the whole fit.
        fold = fold_of.get(item.template)
        w = whole if fold is None or item.split != "tune" else by_fold[fold]
        return float(1.0 / (1.0 + np.exp(-float(np.append(cache[text], 1.0) @ w))))

    def claim(text: str, weak: bool) -> float:
        return model.probability(cache[text], weak)

    def report(name: str, flagged: Callable[[Row], bool]) -> None:
        cells: dict[tuple[str, ...], list[int]] = {}
        for row in rows:
            it = row.item
            hit = flagged(row)
            for key in ((it.label, it.split), (it.label, it.split, wave(it))):
                cell = cells.setdefault(key, [0, 0])
                cell[0] += hit
                cell[1] += 1

        def rate(*key: str) -> str:
            hit, n = cells.get(key, [0, 0])
            return f"{100 * hit / n:5.1f}%" if n else "    -"

        print(
            f"{name:26s} det {rate('claim', 'tune')} {rate('claim', 'heldout')} "
            f"{rate('claim', 'heldout', 'w3')} {rate('claim', 'heldout', 'w5')}   "
            f"FP {rate('honest', 'tune')} {rate('honest', 'heldout')} "
            f"{rate('honest', 'heldout', 'w3')} {rate('honest', 'heldout', 'w5')}"
        )

    print(f"{'':26s}     tune  held    w3h    w5h       tune  held    w3h    w5h")
    report("today's filter", lambda r: not r.accepted)
    for t in TOPIC_GRID:
        report(
            f"+ gate topic>={t}",
            lambda r, t=t: not r.accepted or any(topic(s, r.item) >= t for s, _ in r.inputs),
        )
    t = args.detail
    print(f"\nhonest lessons quarantined by the gate alone at topic >= {t}, per category:")
    per: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        if row.item.label != "honest" or not row.accepted:
            continue
        cell = per.setdefault((row.item.category, row.item.split), [0, 0])
        cell[0] += any(topic(s, row.item) >= t for s, _ in row.inputs)
        cell[1] += 1
    for category in sorted({c for c, _ in per}):
        shown = [
            f"{split} {per[(category, split)][0]}/{per[(category, split)][1]}"
            for split in ("tune", "heldout")
            if (category, split) in per
        ]
        print(f"  {category:20s} " + ", ".join(shown))
    print()
    for t in TOPIC_GRID[1:4]:
        for c in CLAIM_GRID:
            report(
                f"+ gate topic>={t} claim>={c}",
                lambda r, t=t, c=c: (
                    not r.accepted
                    or any(topic(s, r.item) >= t and claim(s, w) >= c for s, w in r.inputs)
                ),
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
