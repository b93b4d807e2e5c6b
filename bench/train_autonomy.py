"""Train the autonomy filter's meaning classifier on the TUNED split only.

A logistic regression (L2, class-balanced, fitted by Newton's method in numpy: deterministic,
no new dependency) over [MiniLM unit vector of a text, the text's weak structural hint].
Samples, all from ``split == "tune"`` of ``bench/data/autonomy_corpus.jsonl`` plus the
hand-written exemplars of the grammar (``autonomy_rules.vocabulary``):

* claims: the whole content (label 1);
* honest lessons: the content and each of its sentences with permission vocabulary
  (label 0) — what the filter scores at run time.

The regularisation is chosen by cross-validation over whole templates (5 folds grouped by
``template``, so a fold's texts never share phrasing with its training texts, as the
held-out split does not), and the out-of-fold probabilities are printed for the records the
filter would score, with the false-positive and detection rates at a few thresholds: the
``AutonomyParams`` probabilities are set from those figures, never from the held-out split.

Writes ``policy/autonomy_model.json``. Run:
``.venv/bin/python bench/train_autonomy.py [--vectors-cache /tmp/autonomy_vectors.npz]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.autonomy_corpus import DEFAULT_PATH, CorpusItem, load_corpus
from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.node.embedding import make_minilm
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.policy.autonomy import (
    MODEL_FILE,
    AutonomyFilter,
    AutonomyParams,
    Evidence,
    Polarity,
)
from lamarck.policy.autonomy_rules.vocabulary import CLAIM_EXEMPLARS, SAFE_EXEMPLARS
from lamarck.policy.filters import VerdictKind
from lamarck.proto.memory import MemoryV2

OUT = Path(__file__).resolve().parents[1] / "node" / "importing" / MODEL_FILE
FOLDS = 5
L2_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
Array = npt.NDArray[np.float64]


def record_of(text: str) -> MemoryV2:
    """A minimal memory whose content is ``text`` (the filter reads text fields only)."""
    return MemoryV2.from_obj(
        {
            "schema_version": "2.0",
            "id": "00000000-0000-4000-8000-000000000001",
            "type": "AC",
            "content": text,
            "confidence": 0.7,
            "context": {"domain": "dev", "environment": "ci", "tools": []},
            "provenance": {
                "source_agent_id": "lmk1" + "a" * 32,
                "source_type": "empirical",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            },
            "confidence_interval": {"mean": 0.7, "std_dev": 0.1},
        }
    )


class VectorCache:
    """Embeds texts once; optionally kept in an ``.npz`` between runs (development only)."""

    def __init__(self, embedder: Embedder, path: Path | None) -> None:
        self.embedder = embedder
        self.path = path
        self.vectors: dict[str, Vectors] = {}
        if path is not None and path.exists():
            data = np.load(path, allow_pickle=False)
            for t, v in zip(data["texts"].tolist(), data["vectors"], strict=True):
                self.vectors[str(t)] = v

    def embed(self, texts: Sequence[str]) -> None:
        """Embed every text not yet known."""
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            out = self.embedder.embed(todo)
            for t, v in zip(todo, out, strict=True):
                self.vectors[t] = v
        if self.path is not None and todo:
            texts_all = list(self.vectors)
            np.savez(
                self.path,
                texts=np.array(texts_all),
                vectors=np.stack([self.vectors[t] for t in texts_all]),
            )

    def __getitem__(self, text: str) -> Vectors:
        return self.vectors[text]


def fit(x: Array, y: Array, l2: float, iterations: int = 30) -> Array:
    """Class-balanced L2 logistic regression by Newton's method; the last column is 1."""
    n, d = x.shape
    pos = max(float(y.sum()), 1.0)
    neg = max(float(n - y.sum()), 1.0)
    sw = np.where(y > 0.5, n / (2 * pos), n / (2 * neg))
    w = np.zeros(d)
    reg = np.full(d, l2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        z = np.clip(x @ w, -60, 60)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = x.T @ (sw * (p - y)) + reg * w
        h = (x * (sw * p * (1 - p))[:, None]).T @ x + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


#: One training sample: (the text embedded, the content it was read in, its weak structural
#: hint, its label, the template that wrote it: cross-validation folds whole templates).
Sample = tuple[str, str, bool, int, str]


def record_samples(item: CorpusItem, evidence: Sequence[Evidence]) -> list[Sample]:
    """What the classifier learns from one tuned record, given the evidence structure reads in
    it: the whole content (1 for a claim, 0 for an honest lesson) and, of an honest lesson,
    each sentence with permission vocabulary that structure does not call a claim (0): what
    the filter scores at run time."""
    weak_any = any(e.polarity is Polarity.WEAK for e in evidence)
    label = 1 if item.label == "claim" else 0
    out: list[Sample] = [(item.text, item.text, weak_any, label, item.template)]
    if not label:
        out.extend(
            (e.sentence, item.text, e.polarity is Polarity.WEAK, 0, item.template)
            for e in evidence
            if e.cue and e.polarity not in (Polarity.CLAIM, Polarity.INJECTED)
        )
    return out


def exemplar_samples() -> list[Sample]:
    """The grammar's hand-written exemplars: claims (1) and careful lessons (0)."""
    claims = [(t, t, False, 1, "exemplar:claim") for t in CLAIM_EXEMPLARS]
    return claims + [(t, t, False, 0, "exemplar:safe") for t in SAFE_EXEMPLARS]


def features(vector: Vectors, weak: bool) -> Array:
    """[vector, weak, 1] — the same order the filter reads the weights in (bias apart)."""
    return np.concatenate([vector.astype(np.float64), [float(weak), 1.0]])


def main(argv: list[str] | None = None) -> int:
    """Train, cross-validate, write the model; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--vectors-cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    params = AutonomyParams()
    structure = AutonomyFilter(params)  # no model: structure only, to read the sentences
    tune = [it for it in load_corpus(args.corpus) if it.split == "tune"]
    embedder = make_minilm(params=OnnxParams())
    cache = VectorCache(embedder, args.vectors_cache)

    samples: list[Sample] = []
    # Scoring inputs per record, as the filter builds them when structure decides nothing.
    scored: list[tuple[CorpusItem, bool, list[tuple[str, bool]]]] = []
    for it in tune:
        rec = record_of(it.text)
        judgement = structure.judge(rec, _EmptyView())
        evidence = list(judgement.evidence)
        weak_any = any(e.polarity is Polarity.WEAK for e in evidence)
        samples.extend(record_samples(it, evidence))
        undecided = judgement.verdict.kind is VerdictKind.ACCEPT or (
            judgement.verdict.kind is VerdictKind.QUARANTINE and weak_any
        )
        scored.append((it, undecided, structure.meaning_inputs(rec, evidence)))
    samples.extend(exemplar_samples())
    cache.embed([s[0] for s in samples] + [t for _, _, inputs in scored for t, _ in inputs])

    x = np.stack([features(cache[t], weak) for t, _, weak, _, _ in samples])
    y = np.array([float(label) for _, _, _, label, _ in samples])
    groups = [g for *_, g in samples]
    names = sorted(set(groups))
    fold_of = {g: i % FOLDS for i, g in enumerate(names)}
    sample_fold = np.array([fold_of[g] for g in groups])
    print(f"tune split: {len(tune)} records, {len(samples)} samples ({int(y.sum())} claims)")

    best_l2, best_loss = L2_GRID[0], float("inf")
    oof_by_l2: dict[float, list[Array]] = {}
    for l2 in L2_GRID:
        weights = [fit(x[sample_fold != k], y[sample_fold != k], l2) for k in range(FOLDS)]
        oof_by_l2[l2] = weights
        p = np.empty(len(y))
        for k in range(FOLDS):
            m = sample_fold == k
            p[m] = 1 / (1 + np.exp(-np.clip(x[m] @ weights[k], -60, 60)))
        eps = 1e-9
        loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
        print(f"  l2 {l2:5.2f}: out-of-fold log loss {loss:.4f}")
        if loss < best_loss:
            best_l2, best_loss = l2, loss
    print(f"chosen l2 {best_l2}")

    # Out-of-fold record scores, the run-time way: max over the scored texts.
    weights = oof_by_l2[best_l2]
    rows: list[tuple[str, str, bool, float]] = []
    for it, undecided, inputs in scored:
        w = weights[fold_of[it.template]]
        best = 0.0
        for text, weak in inputs:
            z = float(features(cache[text], weak) @ w)
            best = max(best, 1 / (1 + np.exp(-np.clip(z, -60, 60))))
        rows.append((it.label, it.category, undecided, best))
    print("\nout-of-fold (whole templates held out), records the meaning check would score:")
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99):
        honest = [r for r in rows if r[0] == "honest" and r[2]]
        fp = sum(r[3] >= t for r in honest)
        claims = [r for r in rows if r[0] == "claim"]
        det = sum(r[3] >= t for r in claims)
        worst = max(
            (
                sum(r[3] >= t for r in honest if r[1] == c) / max(1, sum(r[1] == c for r in honest))
                for c in {r[1] for r in honest}
            ),
            default=0.0,
        )
        print(
            f"  p >= {t:4.2f}: honest flagged {fp}/{len(honest)} ({100 * fp / len(honest):.2f} %,"
            f" worst category {100 * worst:.1f} %); claims by meaning alone {det}/{len(claims)}"
            f" ({100 * det / len(claims):.1f} %)"
        )

    final = fit(x, y, best_l2)
    obj = {
        "embedder": embedder.name,
        "dim": embedder.dim,
        "features": "unit vector, weak hint; bias apart",
        "trained_on": f"{args.corpus.name} split=tune ({len(tune)} records) + exemplars",
        "l2": best_l2,
        "weights": [round(float(v), 6) for v in final[:-1]],
        "bias": round(float(final[-1]), 6),
    }
    args.out.write_text(json.dumps(obj) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


class _EmptyView:
    """An ``ImportView`` that knows nothing (the structure check reads no view)."""

    self_node_id = "lmk1" + "b" * 32

    def reputation(self, node_id: str) -> float:
        return 0.5


if __name__ == "__main__":
    raise SystemExit(main())
