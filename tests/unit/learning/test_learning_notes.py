"""A claim remembered without an operation is keyed by its first words, the same way each time."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.notes import NoteKeyParams, note_operation

PARAMS = NoteKeyParams()


def test_the_key_is_the_first_words_lower_case() -> None:
    text = "Run the linters before the tests, always and everywhere."
    assert note_operation(text, PARAMS) == "note:run-the-linters-before-the-tests"
    assert note_operation(text, PARAMS) == note_operation("  " + text.upper(), PARAMS)


def test_letters_of_any_script_make_words_and_punctuation_does_not() -> None:
    assert note_operation("Überprüfe die Ära!", PARAMS) == "note:überprüfe-die-ära"
    assert note_operation("use --no-cache", PARAMS) == "note:use-no-cache"


def test_a_text_without_words_is_keyed_by_its_hash() -> None:
    key = note_operation("→ …", PARAMS)
    assert key.startswith("note:") and len(key) == len("note:") + PARAMS.hash_chars
    assert key != note_operation("← …", PARAMS)


def test_the_slug_is_capped() -> None:
    long = " ".join(["supercalifragilistic"] * 6)
    assert len(note_operation(long, PARAMS)) <= len("note:") + PARAMS.max_chars


@pytest.mark.parametrize("field", ["words", "max_chars", "hash_chars"])
def test_params_are_checked(field: str) -> None:
    with pytest.raises(ConfigError) as err:
        NoteKeyParams(**{field: 0})
    assert err.value.details["field"] == field
