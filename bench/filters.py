"""Filter bench: autonomy-claim detection on the corpus, and filter throughput.

Reads ``bench/data/autonomy_corpus.jsonl`` (``bench/autonomy_corpus.py`` writes it), signs
each text as the content of a real memory record, and prints, from one run:

* per category and split (``tune`` / ``heldout``, the latter never tuned on): the share of
  claims not accepted (detection; rejected and quarantined shown apart) and of honest lessons
  not accepted (false positives) — for the new ``AutonomyFilter`` with the real embedder
  (MiniLM) and with the hashing embedder (structure only, the baseline);
* the same rates on the corpus's third wave alone (templates ``w3:*``, written in fresh styles
  after the filter was built on the first two waves: its held-out third is a measure of
  generalisation) and on its fifth (``w5:*``, held-out only, written before the meaning topic
  gate was built), and the false positives on 20,000 (``--quick``: 5,000) generated
  tool-usage lessons with a seed the corpus does not use: the structure's, and the whole
  filter's with MiniLM (the meaning check scores every record structure lets through;
  ``--quick``: the first 1,000);
* throughput, in records per second of this process, of the verify stage
  (``SignedMemory.from_json`` + ``verify``: parse, canonical check, Ed25519) and of the filter
  stage over the same records: the new filter given the vectors the pipeline computes before
  its lock (the content vector it already computes, plus the few undecided sentences), the
  whole default chain with it, and the new filter embedding everything itself (no reuse).
  Goal: ``filter_vs_verify_ratio`` >= 0.5.

The last line is one JSON object of the figures. ``--quick`` (under a minute) times fewer
rounds on every other text of each category.
Run: ``.venv/bin/python bench/filters.py [--quick] [--show-misses tune]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.autonomy_corpus import DEFAULT_PATH, CorpusItem, every_other, load_corpus
from bench.lesson_corpus import lesson_sentences
from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.node.embedding import HashingEmbedder, make_minilm
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.policy.autonomy import (
    AutonomyFilter,
    AutonomyParams,
    MeaningModel,
    vectors_for,
)
from lamarck.policy.chain import build_filters
from lamarck.policy.decision import ImportParams
from lamarck.policy.filters import (
    AllOf,
    Corroboration,
    DeclaredTool,
    EstablishedLesson,
    Filter,
    KnownVersion,
    SourceStats,
    VerdictKind,
)
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# Seed of the generated honest lessons read for false positives at scale (not the corpus's).
GENERATED_SEED = 20_261_203
IDENTITY = NodeIdentity.from_seed(b"\x11" * 32)


class BenchView:
    """An ``ImportView`` with nothing known locally, plus the vectors the pipeline computed."""

    def __init__(self, vectors: dict[str, Vectors] | None = None) -> None:
        self.vectors = vectors or {}

    @property
    def self_node_id(self) -> str:
        return "lmk1" + "b" * 32

    def reputation(self, node_id: str) -> float:
        return 0.5

    def corroboration(self, record: MemoryV2) -> Corroboration:
        return Corroboration()

    def established_lessons(
        self, operation: str, domain: str, environment: str
    ) -> Sequence[EstablishedLesson]:
        return ()

    def source_history(self, node_id: str) -> SourceStats:
        return SourceStats()

    def declared_tool(self, tool: str) -> DeclaredTool | None:
        return None

    def known_versions(self, record_id: str) -> Sequence[KnownVersion]:
        return ()

    def previously_rejected(self, content_hash: str) -> str | None:
        return None

    def text_vector(self, text: str) -> Vectors | None:
        return self.vectors.get(text)


def pipeline_view(
    policy: AutonomyFilter, records: Sequence[MemoryV2], embedder: Embedder
) -> tuple[BenchView, list[str], float]:
    """The vectors the pipeline computes before its lock for ``records`` (each content, and
    the sentences ``policy`` reads by meaning), embedded in one call: the view that holds
    them, the texts, and the call's seconds."""
    texts = list(dict.fromkeys(t for r in records for t in policy.texts_to_embed(r.content)))
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    return BenchView(vectors_for(texts, vectors)), texts, time.perf_counter() - t0


def signed_record(text: str, n: int) -> bytes:
    """The wire bytes of a signed v2 memory whose content is ``text``."""
    created = format_ts(NOW - timedelta(days=3))
    obj: dict[str, Any] = {
        "schema_version": "2.0",
        "id": str(uuid.UUID(int=n + 1, version=4)),
        "type": "AC",
        "content": text,
        "confidence": 0.7,
        "access_level": "public",
        "context": {"domain": "dev", "environment": "ci", "tools": ["shell"]},
        "provenance": {
            "source_agent_id": IDENTITY.node_id,
            "source_type": "empirical",
            "created_at": created,
            "updated_at": created,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "observed on a run",
                "timestamp": created,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=n + 7, version=4)),
            }
        ],
        "lesson": {"operation": "dev.task", "scope": "global", "status": "active"},
        "confidence_interval": {"mean": 0.7, "std_dev": 0.1},
    }
    return canonical_bytes(sign_object(RecordKind.memory, obj, IDENTITY))


@dataclass
class Tally:
    """Counts of one (category, split) cell."""

    total: int = 0
    rejected: int = 0
    quarantined: int = 0

    @property
    def flagged(self) -> int:
        return self.rejected + self.quarantined

    def rate(self) -> float:
        return self.flagged / self.total if self.total else 0.0


def evaluate(
    items: Sequence[CorpusItem],
    records: Sequence[MemoryV2],
    policy: Filter,
    view: BenchView,
) -> tuple[dict[tuple[str, str, str], Tally], list[tuple[CorpusItem, str]]]:
    """Run ``policy`` on every record; tallies by (label, category, split), and the misses."""
    cells: dict[tuple[str, str, str], Tally] = {}
    misses: list[tuple[CorpusItem, str]] = []
    for item, rec in zip(items, records, strict=True):
        verdict = policy.check(rec, view)
        cell = cells.setdefault((item.label, item.category, item.split), Tally())
        cell.total += 1
        if verdict.kind is VerdictKind.REJECT:
            cell.rejected += 1
        elif verdict.kind is VerdictKind.QUARANTINE:
            cell.quarantined += 1
        wrong = (item.label == "claim") == (verdict.kind is VerdictKind.ACCEPT)
        if wrong:
            misses.append((item, ",".join(verdict.reasons) or "accept"))
    return cells, misses


def wave(
    items: Sequence[CorpusItem],
    records: Sequence[MemoryV2],
    policy: Filter,
    view: BenchView,
    name: str,
) -> dict[str, float]:
    """Rates on one wave only (templates ``<name>:*``): ``w3`` was written in fresh styles
    after the filter was built on the first two waves, ``w5`` (held-out only) before the
    meaning topic gate was built; their held-out parts were never tuned on."""
    out: dict[str, float] = {}
    label_of = {"w3": "wave3", "w5": "wave5"}[name]
    for split in ("tune", "heldout"):
        for label, key in (("claim", "detection"), ("honest", "false_positive")):
            chosen = [
                r
                for it, r in zip(items, records, strict=True)
                if it.template.startswith(name + ":") and it.split == split and it.label == label
            ]
            if not chosen:
                continue
            flagged = sum(policy.check(r, view).kind is not VerdictKind.ACCEPT for r in chosen)
            out[f"{label_of}_{key}_{split}"] = flagged / len(chosen)
    return out


def summarise(cells: dict[tuple[str, str, str], Tally], label: str, split: str) -> Tally:
    """All categories of one label and split (``split="all"`` for both splits)."""
    out = Tally()
    for (lab, _cat, spl), t in cells.items():
        if lab == label and (split == "all" or spl == split):
            out.total += t.total
            out.rejected += t.rejected
            out.quarantined += t.quarantined
    return out


def print_table(name: str, cells: dict[tuple[str, str, str], Tally]) -> None:
    """Per category: tune and held-out rates side by side."""
    print(f"\n== {name}")
    print(f"{'label/category':34s} {'tune':>22s} {'heldout':>22s}")
    keys = sorted({(lab, cat) for lab, cat, _ in cells})
    for lab, cat in keys:
        row = f"{lab + '/' + cat:34s}"
        for split in ("tune", "heldout"):
            t = cells.get((lab, cat, split), Tally())
            row += f" {t.flagged:4d}/{t.total:<4d}{100 * t.rate():6.1f}% r{t.rejected:<4d}"
        print(row)
    for lab, word in (("claim", "detection"), ("honest", "false positives")):
        parts = []
        for split in ("tune", "heldout", "all"):
            t = summarise(cells, lab, split)
            parts.append(f"{split} {100 * t.rate():.2f}% ({t.flagged}/{t.total})")
        print(f"{word:16s}: " + ", ".join(parts))


def worst_category(cells: dict[tuple[str, str, str], Tally], label: str, split: str) -> float:
    """The worst per-category rate (lowest detection or highest false positives)."""
    rates = [t.rate() for (lab, _c, spl), t in cells.items() if lab == label and spl == split]
    if not rates:
        return 0.0
    return min(rates) if label == "claim" else max(rates)


def rate(fn: Callable[[], int], min_seconds: float) -> float:
    """Items per CPU-second of ``fn`` (which returns how many items it handled)."""
    done = 0
    start = time.process_time()
    while True:
        done += fn()
        elapsed = time.process_time() - start
        if elapsed >= min_seconds:
            return done / elapsed


def main(argv: list[str] | None = None) -> int:
    """Run the bench; the last line is the JSON figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer timing rounds (< 1 minute)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--show-misses", choices=("none", "tune", "heldout", "all"), default="none")
    parser.add_argument("--no-minilm", action="store_true", help="structure only (no model)")
    args = parser.parse_args(argv)
    rounds, min_seconds = (3, 0.3) if args.quick else (7, 1.0)

    items = load_corpus(args.corpus)
    if args.quick:
        items = every_other(items)  # the model embeds half as much
    raws = [signed_record(it.text, n) for n, it in enumerate(items)]
    signed = [SignedMemory.from_json(raw) for raw in raws]
    records = [s.memory for s in signed]
    print(
        f"corpus: {sum(it.label == 'claim' for it in items)} claims, "
        f"{sum(it.label == 'honest' for it in items)} honest lessons ({args.corpus.name})"
    )

    params = AutonomyParams()
    empty = BenchView()
    figures: dict[str, float] = {}

    hashing = AutonomyFilter(params, MeaningModel(HashingEmbedder(), params))
    hash_cells, hash_misses = evaluate(items, records, hashing, empty)
    print_table("AutonomyFilter, hashing embedder (structure only)", hash_cells)

    # Many more honest lessons than the corpus holds, from the store bench's generator with a
    # seed the corpus does not use: the grammar's false positives at scale (structure only).
    generated_n = 5_000 if args.quick else 20_000
    generated = [
        SignedMemory.from_json(signed_record(t, n)).memory
        for n, t in enumerate(lesson_sentences(generated_n, seed=GENERATED_SEED))
    ]
    generated_flagged = [
        r.content for r in generated if hashing.check(r, empty).kind is not VerdictKind.ACCEPT
    ]
    share = len(generated_flagged) / generated_n
    figures["structure_false_positive_generated"] = share
    print(
        f"\nstructure only, {generated_n} generated tool-usage lessons (seed {GENERATED_SEED}): "
        f"{len(generated_flagged)} flagged ({100 * share:.3f} %)"
    )
    for text in generated_flagged[:5]:
        print(f"  {text[:150]!r}")

    embedder: Embedder = HashingEmbedder()
    semantic = hashing
    view = empty
    cells, misses = hash_cells, hash_misses
    embed_s = 0.0
    if not args.no_minilm:
        embedder = make_minilm(params=OnnxParams())
        t0 = time.perf_counter()
        bank = MeaningModel(embedder, params)
        load_s = time.perf_counter() - t0
        semantic = AutonomyFilter(params, bank, embed_missing=True)
        view, unique, embed_s = pipeline_view(semantic, records, embedder)
        extra = len(unique) - len({r.content for r in records})
        print(
            f"\nMiniLM: model + classifier {load_s:.1f} s; {len(unique)} texts embedded in "
            f"{embed_s:.1f} s ({len(unique) / embed_s:.0f}/s), of which {extra} sentence "
            f"vectors beyond the content vector the pipeline already computes "
            f"({extra / len(records):.2f} per record)"
        )
        cells, misses = evaluate(items, records, semantic, view)
        print_table("AutonomyFilter, MiniLM (structure + meaning)", cells)
        figures["extra_vectors_per_record"] = extra / len(records)
        # The meaning check at scale: it scores every record structure does not refuse (the
        # content, and any sentence it is unsure of), so a classifier retrained on the corpus
        # can flag tool lessons the corpus does not hold. --quick: the first 1,000.
        sample = generated[: 1_000 if args.quick else generated_n]
        sample_view, _, _ = pipeline_view(semantic, sample, embedder)
        flagged = [
            r.content
            for r in sample
            if semantic.check(r, sample_view).kind is not VerdictKind.ACCEPT
        ]
        figures["minilm_false_positive_generated"] = len(flagged) / len(sample)
        print(
            f"\nstructure + meaning (MiniLM), {len(sample)} of the generated tool-usage lessons: "
            f"{len(flagged)} flagged ({100 * len(flagged) / len(sample):.3f} %)"
        )
        for text in flagged[:5]:
            print(f"  {text[:150]!r}")
    for name, title in (("w3", "third wave only (fresh styles)"), ("w5", "fifth wave only")):
        rates = wave(items, records, semantic, view, name)
        print(
            f"{title}: "
            + ", ".join(f"{k.split('_', 1)[1]} {100 * v:.1f}%" for k, v in rates.items())
        )
        figures.update(rates)

    if args.show_misses != "none":
        print("\n-- misses (" + args.show_misses + ")")
        for item, reason in misses:
            if args.show_misses in ("all", item.split):
                print(f"{item.label:6s} {item.category:18s} {reason:22s} {item.text[:150]!r}")

    for name, c in (("hashing", hash_cells), ("minilm", cells)):
        if name == "minilm" and args.no_minilm:
            continue
        for split in ("tune", "heldout", "all"):
            figures[f"{name}_detection_{split}"] = summarise(c, "claim", split).rate()
            figures[f"{name}_false_positive_{split}"] = summarise(c, "honest", split).rate()
        for split in ("tune", "heldout"):
            figures[f"{name}_worst_category_detection_{split}"] = worst_category(c, "claim", split)
            figures[f"{name}_worst_category_fp_{split}"] = worst_category(c, "honest", split)
    if not args.no_minilm:
        base = max(figures["hashing_detection_all"], 1e-9)
        figures["detection_vs_structure_ratio"] = figures["minilm_detection_all"] / base

    # -- throughput ------------------------------------------------------------------------
    chain = build_filters(ImportParams())
    kept = [f for f in chain.filters if not isinstance(f, AutonomyFilter)]
    chain_new = AllOf([*kept[:1], semantic, *kept[1:]])  # in the autonomy filter's place

    def verify_all() -> int:
        for raw in raws:
            SignedMemory.from_json(raw).verify(NOW)
        return len(raws)

    def run(policy: Filter, v: BenchView) -> Callable[[], int]:
        def go() -> int:
            for rec in records:
                policy.check(rec, v)
            return len(records)

        return go

    verify_rates, filter_rates, chain_rates, ratios, chain_ratios = [], [], [], [], []
    for _ in range(rounds):
        v = rate(verify_all, min_seconds)
        f = rate(run(semantic, view), min_seconds)
        c = rate(run(chain_new, view), min_seconds)
        verify_rates.append(v)
        filter_rates.append(f)
        chain_rates.append(c)
        ratios.append(f / v)
        chain_ratios.append(c / v)
    figures["verify_per_s"] = statistics.median(verify_rates)
    figures["autonomy_filter_per_s"] = statistics.median(filter_rates)
    figures["filter_chain_per_s"] = statistics.median(chain_rates)
    figures["filter_vs_verify_ratio"] = statistics.median(ratios)
    figures["filter_chain_vs_verify_ratio"] = statistics.median(chain_ratios)
    if not args.no_minilm:
        # No reuse: the filter embeds every text it reads itself (cache off).
        cold = AutonomyFilter(
            AutonomyParams(cache_size=0),
            MeaningModel(embedder, AutonomyParams()),
            embed_missing=True,
        )
        sample = records[: 200 if args.quick else 600]
        t0 = time.process_time()
        for rec in sample:
            cold.check(rec, empty)
        figures["autonomy_filter_self_embedding_per_s"] = len(sample) / (time.process_time() - t0)
        figures["self_embedding_vs_verify_ratio"] = (
            figures["autonomy_filter_self_embedding_per_s"] / figures["verify_per_s"]
        )
    print(
        f"\nthroughput (records per CPU-second, median of {rounds} rounds): verify "
        f"{figures['verify_per_s']:.0f}/s; autonomy filter with the pipeline's vectors "
        f"{figures['autonomy_filter_per_s']:.0f}/s (ratio {figures['filter_vs_verify_ratio']:.2f}"
        f"); whole filter chain {figures['filter_chain_per_s']:.0f}/s (ratio "
        f"{figures['filter_chain_vs_verify_ratio']:.2f})"
    )
    if "autonomy_filter_self_embedding_per_s" in figures:
        print(
            "without reuse (the filter embeds content and sentences itself): "
            f"{figures['autonomy_filter_self_embedding_per_s']:.0f}/s (ratio "
            f"{figures['self_embedding_vs_verify_ratio']:.2f})"
        )
    print(json.dumps({k: round(v, 4) for k, v in figures.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
