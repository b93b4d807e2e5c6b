"""Late chunking: the autonomy filter's sentence vectors from the content's own pass (issues
17 §4 and 11 §1). An experiment that decides a design; no goal is judged on it.

The import embeds each record's content and, for the sentences the autonomy filter is unsure
of, each such sentence alone the first time the filter meets it (it keeps their vectors): ~0.14
texts a record beyond the content in a catch-up (0.19 before it kept them), about a tenth of its
CPU (``bench/catchup.py`` shows it), on a machine whose cores the model fills.
*Late chunking* takes a sentence's vector from the content's own pass instead: the mean of the
content's token states over the sentence's tokens (the content's vector is the mean over all
of them). It costs no model run, but the vectors differ from a sentence embedded alone (it
reads its neighbours), so the meaning classifier must be trained on the vectors it will read.

Measured in one run, on the real MiniLM (onnxruntime), for both ways of taking a sentence's
vector (``standalone`` today, ``late``):

* **detection and false positives** of the filter (structure, then the meaning check at
  ``AutonomyParams``' probabilities) on ``bench/data/autonomy_corpus.jsonl``: a logistic
  regression trained as ``bench/train_autonomy.py`` trains it (the tune split and the
  exemplars, its L2), on that way's vectors, then read on the tune and the held-out split;
* **the catch-up's embedding work** over the catch-up bench's lessons
  (``bench/lesson_corpus.py``): the texts embedded a record beyond the content, and this
  process's CPU per record to embed the contents alone, the contents and the filter's
  sentences (today), and the contents with their sentences pooled from the same pass (plus,
  alone, any sentence whose words could not be found in the content: normalising changed
  them); ``content_alone_vs_*_ratio`` is the share of that work the contents alone are;
* the cosine of the late pass's content vectors to the embedder's own (the same pass).

The late pass reads the ONNX embedder's tokenizer and session directly: the design is not
built yet. Usage: ``python -m bench.late_chunking [--quick] [--n N] [--rounds R]``; the last
line is one JSON object of the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.autonomy_corpus import DEFAULT_PATH, CorpusItem, every_other, load_corpus
from bench.filters import BenchView
from bench.lesson_corpus import lesson_sentences
from bench.train_autonomy import (
    _EmptyView,
    exemplar_samples,
    features,
    fit,
    record_of,
    record_samples,
)
from lamarck.domain.embedder import Vectors
from lamarck.node.embedding import make_minilm
from lamarck.node.minilm_onnx import OnnxMiniLMEmbedder, OnnxParams
from lamarck.policy.autonomy import (
    MODEL_FILE,
    AutonomyFilter,
    AutonomyParams,
    ClassifierWeights,
    Evidence,
    MeaningModel,
)
from lamarck.policy.filters import VerdictKind
from lamarck.proto.memory import MemoryV2

_WORD = re.compile(r"[a-z0-9]+")
WAYS = ("standalone", "late")


def span_of(sentence: str, content: str) -> tuple[int, int] | None:
    """The characters of ``content`` whose words (lower-cased letters and digits) are exactly
    ``sentence``'s, the first such run; None when normalising changed a word (a look-alike,
    leetspeak, a spaced-out or split word): that sentence is embedded alone."""
    want = _WORD.findall(sentence)
    if not want:
        return None
    words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(content.lower())]
    n = len(want)
    for i in range(len(words) - n + 1):
        if [w for w, _, _ in words[i : i + n]] == want:
            return words[i][1], words[i + n - 1][2]
    return None


class LatePass:
    """Embeds contents in batches and pools named character spans of each from the same run."""

    def __init__(self, embedder: OnnxMiniLMEmbedder) -> None:
        # Experiment only: the token states and their offsets are not public API.
        self._e: Any = embedder

    def run(
        self, contents: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[Vectors, list[Vectors]]:
        """Content vectors (as the embedder computes them) and, per content, its spans'."""
        e = self._e
        out = np.empty((len(contents), e.dim), dtype=np.float32)
        parts: list[Vectors] = [np.empty((0, e.dim), dtype=np.float32)] * len(contents)
        order = sorted(range(len(contents)), key=lambda i: len(contents[i]))
        step = e.params.batch_size
        session = e._bulk_session if e._bulk_session is not None else e._session
        for start in range(0, len(order), step):
            chunk = order[start : start + step]
            encodings, hidden, mask = e._token_states([contents[i] for i in chunk], session)
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[chunk] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            for row, i in enumerate(chunk):
                offsets = encodings[row].offsets
                vecs = []
                for a, b in spans[i]:
                    rows = [k for k, (s, t) in enumerate(offsets) if t > s and s >= a and t <= b]
                    if not rows:  # past the tokenizer's truncation: NaN, the caller decides
                        vecs.append(np.full(e.dim, np.nan, dtype=np.float32))
                        continue
                    v = hidden[row, rows].mean(axis=0)
                    vecs.append(v / np.linalg.norm(v))
                if vecs:
                    parts[i] = np.stack(vecs).astype(np.float32)
        return out, parts


@dataclass
class Vectoriser:
    """A text's vector for the meaning check, one way or the other, cached."""

    embedder: OnnxMiniLMEmbedder
    way: str

    def __post_init__(self) -> None:
        self._late = LatePass(self.embedder)
        self._cache: dict[tuple[str, str], Vectors] = {}
        self.fallbacks = 0

    def prepare(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Compute the vectors of every (text, content) pair in batches, as an import would."""
        todo = [p for p in dict.fromkeys(pairs) if p not in self._cache]
        whole = [p for p in todo if self._whole(*p)]
        pooled: dict[str, list[tuple[str, tuple[int, int]]]] = {}
        alone: list[tuple[str, str]] = []
        for text, content in todo:
            if self._whole(text, content):
                continue
            span = span_of(text, content) if self.way == "late" else None
            if span is None:
                self.fallbacks += self.way == "late"
                alone.append((text, content))
            else:
                pooled.setdefault(content, []).append((text, span))
        if whole:
            vectors = self.embedder.embed_bulk([c for _, c in whole])
            self._cache.update(zip(whole, vectors, strict=True))
        if alone:
            vectors = self.embedder.embed_bulk([t for t, _ in alone])
            self._cache.update(zip(alone, vectors, strict=True))
        if pooled:
            contents = list(pooled)
            _, parts = self._late.run(contents, [[s for _, s in pooled[c]] for c in contents])
            cut: list[tuple[str, str]] = []
            for c, vectors in zip(contents, parts, strict=True):
                for (text, _), v in zip(pooled[c], vectors, strict=True):
                    if np.isfinite(v).all():
                        self._cache[(text, c)] = v
                    else:
                        cut.append((text, c))
            if cut:  # the sentence lies past the content's truncated tokens: alone
                self.fallbacks += len(cut)
                vectors = self.embedder.embed_bulk([t for t, _ in cut])
                self._cache.update(zip(cut, vectors, strict=True))

    @staticmethod
    def _whole(text: str, content: str) -> bool:
        # The filter scores this text through the content's own vector (``_embedded_as``).
        return text == content or AutonomyFilter._embedded_as(text, content) == content

    def vector(self, text: str, content: str) -> Vectors:
        """The vector the filter reads for ``text`` of ``content``."""
        if (text, content) not in self._cache:
            self.prepare([(text, content)])
        return self._cache[(text, content)]


Read = tuple[CorpusItem, MemoryV2, list[Evidence]]


def read_corpus(items: Sequence[CorpusItem], params: AutonomyParams) -> list[Read]:
    """Every text as a record, with the evidence structure reads in it (once for both ways)."""
    structure = AutonomyFilter(params)
    view = _EmptyView()
    read: list[Read] = []
    for it in items:
        rec = record_of(it.text)
        read.append((it, rec, list(structure.judge(rec, view).evidence)))  # type: ignore[arg-type]
    return read


def detection(
    read: Sequence[Read], way: Vectoriser, params: AutonomyParams, l2: float
) -> dict[str, float]:
    """Train on the tune split's vectors of ``way`` (``train_autonomy``'s samples); then the
    filter itself, with those weights and ``way``'s vectors, judges every text."""
    samples = [s for it, _, ev in read if it.split == "tune" for s in record_samples(it, ev)]
    samples.extend(exemplar_samples())
    way.prepare([(text, content) for text, content, *_ in samples])
    x = np.stack([features(way.vector(text, content), weak) for text, content, weak, *_ in samples])
    w = fit(x, np.array([float(label) for *_, label, _ in samples]), l2)
    weights = ClassifierWeights(way.embedder.name, tuple(float(v) for v in w[:-1]), float(w[-1]))
    autonomy = AutonomyFilter(
        params, MeaningModel(way.embedder, params, weights), embed_missing=True
    )
    scored = {it.text: autonomy.texts_to_embed(it.text) for it, _, _ in read}
    way.prepare([(text, content) for content, texts in scored.items() for text in texts])
    flagged: dict[tuple[str, str], list[bool]] = {}
    for it, rec, _ in read:
        # The vectors of this record's texts as ``way`` takes them (a sentence's late vector
        # depends on its content, so each record gets a view of its own).
        view = BenchView({t: way.vector(t, it.text) for t in scored[it.text]})
        hit = autonomy.check(rec, view).kind is not VerdictKind.ACCEPT
        flagged.setdefault((it.label, it.split), []).append(hit)
    out = {}
    for (label, split), hits in sorted(flagged.items()):
        name = "detection" if label == "claim" else "false_positive"
        out[f"{way.way}_{name}_{split}"] = sum(hits) / len(hits)
    return out


def cpu(fn: Callable[[], object]) -> float:
    """This process's CPU seconds (every thread) to run ``fn``."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def catch_up_work(
    embedder: OnnxMiniLMEmbedder, n: int, rounds: int, params: AutonomyParams
) -> dict[str, float]:
    """Texts and CPU a record of the catch-up's lessons costs to embed, each way (the median
    of ``rounds`` interleaved runs)."""
    contents = lesson_sentences(n, seed=0)
    autonomy = AutonomyFilter(params, MeaningModel(embedder, params), embed_missing=True)
    extras = [autonomy.texts_to_embed(c)[1:] for c in contents]
    spans: list[list[tuple[int, int]]] = []
    alone: list[str] = []
    for c, texts in zip(contents, extras, strict=True):
        found = [span_of(t, c) for t in texts]
        spans.append([s for s in found if s is not None])
        alone.extend(t for t, s in zip(texts, found, strict=True) if s is None)
    # A sentence met again is scored from the vector the filter kept (``cache_size``, more
    # than this run's distinct sentences): each way embeds it once.
    alone = list(dict.fromkeys(alone))
    today = [*contents, *dict.fromkeys(t for texts in extras for t in texts)]
    late = LatePass(embedder)
    runs: dict[str, Callable[[], object]] = {
        "contents": lambda: embedder.embed_bulk(contents),
        "standalone": lambda: embedder.embed_bulk(today),
        "late": lambda: (late.run(contents, spans), embedder.embed_bulk(alone)),
    }
    took: dict[str, list[float]] = {k: [] for k in runs}
    with embedder.bulk():
        embedder.embed_bulk(contents[:32])  # warm the bulk session
        mine, _ = late.run(contents[:64], [[]] * 64)
        theirs = embedder.embed_bulk(contents[:64])
        for _ in range(rounds):  # interleaved: the machine's drift reaches every way alike
            for key, fn in runs.items():
                took[key].append(cpu(fn))
    base, now, pooled = (statistics.median(took[k]) for k in ("contents", "standalone", "late"))
    return {
        "extra_texts_per_record_standalone": len(today) / n - 1.0,
        "extra_texts_per_record_late": len(alone) / n,
        "embed_cpu_ms_per_record_contents": 1e3 * base / n,
        "embed_cpu_ms_per_record_standalone": 1e3 * now / n,
        "embed_cpu_ms_per_record_late": 1e3 * pooled / n,
        "content_alone_vs_standalone_ratio": base / now,
        "content_alone_vs_late_ratio": base / pooled,
        "late_content_vector_min_cosine": float(np.min(np.sum(mine * theirs, axis=1))),
    }


def main(argv: list[str] | None = None) -> int:
    """Run both ways; the last line is the JSON figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="half the corpus, n=160")
    parser.add_argument("--n", type=int, default=0, help="catch-up lessons (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    n = args.n or (160 if args.quick else 3000)
    embedder = make_minilm("onnx", params=OnnxParams())
    if not isinstance(embedder, OnnxMiniLMEmbedder):  # make_minilm("onnx") or ConfigError
        raise SystemExit("the ONNX MiniLM is needed")
    params = AutonomyParams()
    items = load_corpus(args.corpus)
    if args.quick:
        items = every_other(items)  # as bench/filters.py --quick
    # The packaged model's regularisation (train_autonomy.py chose it by cross-validation).
    packaged = resources.files("lamarck.policy").joinpath(MODEL_FILE)
    l2 = float(json.loads(packaged.read_text("utf-8"))["l2"])
    figures: dict[str, float] = {}
    read = read_corpus(items, params)
    print(
        f"corpus: {len(items)} texts; classifier L2 {l2}; unsure at p >= "
        f"{params.unsure_probability}"
    )
    for name in WAYS:
        way = Vectoriser(embedder, name)
        rates = detection(read, way, params, l2)
        figures.update(rates)
        if name == "late":
            figures["late_sentences_embedded_alone"] = way.fallbacks
        print(
            f"{name:10s} detection tune {100 * rates[f'{name}_detection_tune']:.2f} %, held-out "
            f"{100 * rates[f'{name}_detection_heldout']:.2f} %; false positives tune "
            f"{100 * rates[f'{name}_false_positive_tune']:.2f} %, held-out "
            f"{100 * rates[f'{name}_false_positive_heldout']:.2f} %"
        )
    work = catch_up_work(embedder, n, args.rounds, params)
    figures.update(work)
    print(
        f"catch-up's lessons (n={n}): texts beyond the content a record "
        f"{work['extra_texts_per_record_standalone']:.3f} standalone, "
        f"{work['extra_texts_per_record_late']:.3f} late (alone: words changed)"
    )
    print(
        "embedding CPU a record: contents alone "
        f"{work['embed_cpu_ms_per_record_contents']:.2f} ms, with standalone sentences "
        f"{work['embed_cpu_ms_per_record_standalone']:.2f} ms "
        f"({work['content_alone_vs_standalone_ratio']:.3f}), late "
        f"{work['embed_cpu_ms_per_record_late']:.2f} ms "
        f"({work['content_alone_vs_late_ratio']:.3f}); late content vectors' least cosine "
        f"to the embedder's {work['late_content_vector_min_cosine']:.6f}"
    )
    print(json.dumps({k: round(v, 6) for k, v in figures.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
