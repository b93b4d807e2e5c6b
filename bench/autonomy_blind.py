"""Blind split bench: how the autonomy filter does on lessons written in a vocabulary its rules
were NOT written from.

``bench/data/autonomy_blind.jsonl`` holds 30 autonomy claims and 30 honest lessons written
after the rules, in other styles (terse ops notes, non-native English, passive voice, config
snippets, other domains: payments, medical records; one pair in French), each claim with an
honest lesson on the same subject. The rules were never tuned on it, and must not be: a rule
added because a blind lesson slipped through turns the split into a tuned one (write a new
blind split instead).

Prints, for the tuning split of ``bench/data/autonomy_corpus.jsonl`` (``split == "tune"``),
its template-held-out split (``"heldout"``) and the blind split: the catch rate on claims
(held: rejected or quarantined) and the false-hold rate on honest lessons, with the autonomy
filter as the node builds it without a model (structure only, ``build_filters``). With
``--minilm`` also with the meaning check (MiniLM). The last line is one JSON object of the
figures. ``--quick``: every other record of the tuning and held-out splits (the blind split
whole).
Run: ``.venv/bin/python bench/autonomy_blind.py [--quick] [--minilm] [--show]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.filters import BenchView, signed_record
from lamarck.domain.embedder import Embedder
from lamarck.policy.autonomy import AutonomyFilter, AutonomyParams, meaning_model
from lamarck.policy.chain import build_filters
from lamarck.policy.decision import ImportParams
from lamarck.policy.filters import Filter, VerdictKind
from lamarck.proto.signed import SignedMemory

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "autonomy_corpus.jsonl"
BLIND = DATA / "autonomy_blind.jsonl"


@dataclass(frozen=True, slots=True)
class Lesson:
    """One labelled text: ``label`` "claim" or "honest", ``split`` its split."""

    text: str
    label: str
    split: str
    category: str = ""


@dataclass(frozen=True, slots=True)
class Rates:
    """Catch rate on claims and false-hold rate on honest lessons of one split."""

    claims: int
    caught: int
    honest: int
    held: int

    @property
    def catch_ratio(self) -> float:
        """Share of claims held (nan without claims)."""
        return self.caught / self.claims if self.claims else float("nan")

    @property
    def false_hold_ratio(self) -> float:
        """Share of honest lessons held (nan without honest lessons)."""
        return self.held / self.honest if self.honest else float("nan")


def read_lessons(path: Path, splits: Iterable[str] | None = None) -> list[Lesson]:
    """The lessons of a JSON-lines file (only ``splits`` when given)."""
    wanted = None if splits is None else set(splits)
    out: list[Lesson] = []
    for line in path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if wanted is None or obj["split"] in wanted:
            out.append(Lesson(obj["text"], obj["label"], obj["split"], obj.get("category", "")))
    return out


def rates(lessons: Sequence[Lesson], held: Callable[[str], bool]) -> Rates:
    """Catch and false-hold counts of ``lessons`` under ``held`` (True: not accepted)."""
    claims = [x for x in lessons if x.label == "claim"]
    honest = [x for x in lessons if x.label == "honest"]
    return Rates(
        claims=len(claims),
        caught=sum(held(x.text) for x in claims),
        honest=len(honest),
        held=sum(held(x.text) for x in honest),
    )


def figures(by_split: dict[str, Rates], prefix: str = "") -> dict[str, float]:
    """The JSON figures: ``<prefix><split>_catch_ratio`` and ``..._false_hold_ratio``."""
    out: dict[str, float] = {}
    for split, r in by_split.items():
        out[f"{prefix}{split}_catch_ratio"] = r.catch_ratio
        out[f"{prefix}{split}_false_hold_ratio"] = r.false_hold_ratio
    return out


def autonomy_judge(embedder: Embedder | None = None) -> Callable[[str], bool]:
    """Whether the node's autonomy filter holds a signed record with ``text`` as content."""
    chain = build_filters(ImportParams())
    autonomy: Filter = next(f for f in chain.filters if isinstance(f, AutonomyFilter))
    if embedder is not None:
        # The node's filter with the meaning check; the bench gives no vectors, so it embeds
        # what it reads (the pipeline embeds them before the decision).
        params = AutonomyParams()
        autonomy = AutonomyFilter(params, meaning_model(embedder, params), embed_missing=True)
    view = BenchView()
    counter = iter(range(10**9))

    def held(text: str) -> bool:
        record = SignedMemory.from_json(signed_record(text, next(counter))).memory
        return autonomy.check(record, view).kind is not VerdictKind.ACCEPT

    return held


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="every other tuned record")
    parser.add_argument("--minilm", action="store_true", help="also with the meaning check")
    parser.add_argument("--show", action="store_true", help="print the blind split's misses")
    args = parser.parse_args(argv)

    tuned = read_lessons(CORPUS, ("tune", "heldout"))
    if args.quick:
        tuned = tuned[::2]
    blind = read_lessons(BLIND)
    splits = {
        "tune": [x for x in tuned if x.split == "tune"],
        "heldout": [x for x in tuned if x.split == "heldout"],
        "blind": blind,
    }
    judges: list[tuple[str, Callable[[str], bool]]] = [("", autonomy_judge())]
    if args.minilm:
        from lamarck.node.embedding import make_minilm

        judges.append(("minilm_", autonomy_judge(make_minilm())))

    out: dict[str, float] = {}
    for prefix, held in judges:
        name = "structure + meaning (MiniLM)" if prefix else "structure only"
        print(f"-- autonomy filter, {name}")
        by_split = {split: rates(items, held) for split, items in splits.items()}
        for split, r in by_split.items():
            print(
                f"{split:8s} claims caught {r.caught:4d}/{r.claims:<4d} "
                f"({100 * r.catch_ratio:5.1f}%)  honest held {r.held:4d}/{r.honest:<4d} "
                f"({100 * r.false_hold_ratio:5.1f}%)"
            )
        out.update(figures(by_split, prefix))
        if args.show:
            for x in blind:
                if held(x.text) != (x.label == "claim"):
                    miss = "missed" if x.label == "claim" else "held"
                    print(f"  {miss:6s} [{x.category}] {x.text!r}")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
