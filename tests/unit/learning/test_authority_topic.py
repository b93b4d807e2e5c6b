"""The authority topic by lexicon, family by family: folding, split particles, prepositions,
switched-off identifiers, and the second tuning set and its ordinary lessons."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.authority_tuning import EXTRA_TUNING, ORDINARY, TASKS
from lamarck.learning.authority_topic import (
    AUTHORITY_OFF_VALUES,
    AUTHORITY_PARTICLE_VERBS,
    AUTHORITY_SWITCH_NEGATIONS,
    before_object,
    fold,
    split_particle,
    switched_off,
)
from lamarck.learning.influence import InfluenceParams, authority_by_lexicon

P = InfluenceParams()
VERBS = (
    ("turn", ("off",)),
    ("leav", ("out", "off")),
    ("left", ("out", "off")),
    ("go", ("around",)),
    ("schalt", ("ab",)),
)


KEYS = ("verif", "check", "secur", "ssl")


def _reads(task: int, text: str) -> bool:
    # The text alone (no operation): the task's own words must not read a claim for it.
    assert 0 <= task < len(TASKS)
    return authority_by_lexicon("", (), text.replace("{t}", "billing"), P)


# -- folding --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        ("Contraseña", "contrasena"),
        ("Wyłącz", "wylacz"),
        ("Tắt", "tat"),
        ("ŞİFRE", "sifre"),
        ("Lösenord", "losenord"),
        ("It’s", "it's"),
    ],
)
def test_folding_drops_case_and_latin_diacritics(written: str, plain: str) -> None:
    assert fold(written) == plain


def test_folding_keeps_the_vowel_signs_of_indic_scripts() -> None:
    # Devanagari vowel signs are combining marks that carry the word; only the nukta goes.
    assert fold("पासवर्ड") == "पासवर्ड"
    assert fold("मंज़ूरी") == fold("मंजूरी")


def test_a_claim_typed_without_accents_reads_like_one_with_them() -> None:
    for text in ("Usa la contrasena del equipo", "wylacz testy przed wdrozeniem"):
        assert authority_by_lexicon("", (), text, P), text


# -- split particles ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "clause",
    [
        "turn off the lint",
        "turn the canary check off",
        "turned the whole flaky pre-commit hook off",
        "leave the smoke checks out",
        "left them out",
        "going around the review",
        "schalte die langsamen tests von billing einfach ab",
    ],
)
def test_a_verb_and_its_particle_split_by_at_most_gap_words(clause: str) -> None:
    assert split_particle(clause.split(), VERBS, 6)


@pytest.mark.parametrize(
    "clause",
    [
        "turn the tests on",  # not its particle
        "run the checks out of order",  # not its verb
        "google around for the error",  # a short stem reads whole words and inflections only
        "turn the one two three four five six seven off",  # too far apart
        "off we go turn",  # the particle before the verb
    ],
)
def test_no_particle_no_reading(clause: str) -> None:
    assert not split_particle(clause.split(), VERBS, 6)


def test_gap_zero_reads_verb_and_particle_side_by_side_only() -> None:
    assert split_particle(["turn", "off", "it"], VERBS, 0)
    assert not split_particle(["turn", "it", "off"], VERBS, 0)


def test_every_particle_verb_pairs_a_stem_with_particles() -> None:
    assert all(verb and particles for verb, particles in AUTHORITY_PARTICLE_VERBS)


# -- prepositions, switched-off identifiers -------------------------------------------------


def test_a_preposition_reaches_its_object_but_not_past_a_pronoun() -> None:
    def is_object(word: str) -> bool:
        return word.startswith(("test", "check"))

    def reads(clause: str) -> bool:
        return before_object(clause.split(" "), ("without",), is_object, 6)

    assert reads("ship it without running the smoke tests")
    assert not reads("without it the tests fail")
    assert not reads("tests pass without a cache")


@pytest.mark.parametrize(
    "text",
    [
        "git push --no-verify",
        "skip_security=1 make test",
        "pip --disable-checks",
        "verify_ssl: false",
        "npm_config_strict_ssl=false",
        "run_security_checks = 'no'",
    ],
)
def test_identifiers_that_switch_a_check_off(text: str) -> None:
    assert switched_off(fold(text), KEYS, AUTHORITY_SWITCH_NEGATIONS, AUTHORITY_OFF_VALUES)


@pytest.mark.parametrize(
    "text",
    ["pip install --no-deps", "-p no:cacheprovider", "verify_ssl: true", "cgo_enabled=0"],
)
def test_identifiers_that_switch_nothing_off(text: str) -> None:
    assert not switched_off(fold(text), KEYS, AUTHORITY_SWITCH_NEGATIONS, AUTHORITY_OFF_VALUES)


# -- the sets -------------------------------------------------------------------------------


def test_the_tuning_set_is_broad() -> None:
    assert len(EXTRA_TUNING) >= 60 and len(ORDINARY) >= 60
    assert {task for task, _ in EXTRA_TUNING} == set(range(len(TASKS)))
    assert all("{t}" in text for _, text in EXTRA_TUNING if not text.startswith("- "))


@pytest.mark.parametrize(("task", "text"), EXTRA_TUNING)
def test_every_extra_tuning_claim_reads_as_authority(task: int, text: str) -> None:
    assert _reads(task, text)


# The ordinary lessons read as authority, by the rule that reads them: "delete" and "tests"
# in one lesson (action x object, anywhere), and the English "review" (a concept stem).
ORDINARY_READ = frozenset(
    (
        "Delete the stale .pytest_cache folder if the {t} tests collect old files.",
        "Generate the {t} migration with alembic revision --autogenerate and review the diff.",
    )
)


def test_ordinary_lessons_pass_but_for_the_ones_stated() -> None:
    read = {text for task, text in ORDINARY if _reads(task, text)}
    assert read == ORDINARY_READ
    assert len(read) <= 2


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("authority_particle_gap", -1),
        ("authority_particle_verbs", (("turn", ()),)),
        ("authority_particle_verbs", (("turn it", ("off",)),)),
        ("authority_switch_negations", ("",)),
        ("authority_prepositions", (" without",)),
    ],
)
def test_bad_lexicon_params_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        InfluenceParams(**{field: value})  # type: ignore[arg-type]
    assert err.value.details["field"] == field


def test_a_concept_stem_reads_a_compounds_parts_an_action_and_an_object_do_not() -> None:
    assert authority_by_lexicon("", (), "use the cluster-admin role", P)
    assert authority_by_lexicon("", (), "saltare l'approvazione", P)
    # a tool's compound flag is no action against the CI named beside it
    assert not authority_by_lexicon("", (), "Use `--override-channels` with conda in CI", P)
    assert not authority_by_lexicon("", (), "run `npm ci --ignore-scripts` first", P)
    # a one-word flag still is
    assert authority_by_lexicon("", (), "pytest --ignore=tests/integration", P)
