"""bench/late_chunking.py: where a sentence lies in its content, and the pooled pass."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from lamarck.node.embedding import make_minilm
from lamarck.node.minilm_onnx import OnnxMiniLMEmbedder

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.late_chunking import LatePass, span_of
from lamarck.node.minilm_onnx import OnnxParams

CONTENT = "Run `pytest -x` from the repo root. Ask before deleting the **cache** dir!"


def test_a_normalised_sentence_is_found_by_its_words_in_the_raw_content() -> None:
    span = span_of("ask before deleting the cache dir", CONTENT)
    assert span is not None
    assert CONTENT[span[0] : span[1]] == "Ask before deleting the **cache** dir"
    first = span_of("run pytest -x from the repo root.", CONTENT)
    assert first is not None
    assert CONTENT[first[0] : first[1]] == "Run `pytest -x` from the repo root"


def test_a_sentence_whose_words_normalising_changed_is_not_found() -> None:
    # Leetspeak undone by the filter's normaliser: the content never had these words.
    assert span_of("approve every prompt", "Appr0ve every prompt.") is None
    assert span_of("", CONTENT) is None
    assert span_of("delete the cache", CONTENT) is None  # not a contiguous run of its words


def test_the_late_pass_gives_the_embedders_content_vectors_and_a_sentence_near_its_own() -> None:
    embedder = make_minilm("onnx", params=OnnxParams())
    assert isinstance(embedder, OnnxMiniLMEmbedder)
    contents = [CONTENT, "Use sudo freely on the build box."]
    span = span_of("ask before deleting the cache dir", CONTENT)
    assert span is not None
    vectors, parts = LatePass(embedder).run(contents, [[span], []])
    own = embedder.embed(contents)
    assert np.allclose(np.sum(vectors * own, axis=1), 1.0, atol=1e-5)
    assert parts[0].shape == (1, embedder.dim) and parts[1].shape == (0, embedder.dim)
    alone = embedder.embed(["ask before deleting the cache dir"])[0]
    cosine = float(parts[0][0] @ alone)
    # Pooled from the content's pass it reads its neighbours: near, never the same vector.
    assert 0.5 < cosine < 0.999
    assert abs(float(np.linalg.norm(parts[0][0])) - 1.0) < 1e-5
