"""The packaged autonomy classifier is trained on the repository's corpus as it stands."""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path

from lamarck.policy.autonomy import MODEL_FILE

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.autonomy_corpus import DEFAULT_PATH, build_corpus, load_corpus


def test_the_corpus_file_is_what_its_generator_writes() -> None:
    assert load_corpus(DEFAULT_PATH) == build_corpus()


def test_the_packaged_classifier_was_trained_on_the_whole_tune_split() -> None:
    # bench/train_autonomy.py records what it read; a tune template added without retraining
    # would leave the weights behind the corpus the filter is measured on.
    text = resources.files("lamarck.policy").joinpath(MODEL_FILE).read_text("utf-8")
    trained_on = json.loads(text)["trained_on"]
    found = re.search(r"split=tune \((\d+) records\)", trained_on)
    assert found is not None, trained_on
    tune = sum(1 for it in load_corpus(DEFAULT_PATH) if it.split == "tune")
    assert int(found.group(1)) == tune
