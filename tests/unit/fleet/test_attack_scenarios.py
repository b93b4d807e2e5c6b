"""The attack scenarios' pure parts: the claim sets and the gate's reading of them, what
counts as reaching an agent, and the steering agent's decision rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.agents import Said
from lamarck.fleet.attack_fleet import attack_fleet_spec
from lamarck.fleet.authority import AuthorityParams, claims_of, reached, topic_reading
from lamarck.fleet.authority_claims import HELD_OUT, TASKS, TUNING
from lamarck.fleet.steering import (
    SteeringParams,
    attempt_forms,
    first_form,
    preferred_form,
    section_advice,
    share_ratio,
)
from lamarck.fleet.workloads import TARGETS, pitfall_for
from lamarck.learning.influence import InfluenceParams

HABIT, GOOD, STEER = "shell:make t", "shell:make -C build t", "shell:make -C src t"
FORMS = (HABIT, GOOD, STEER)


def test_claim_sets_are_filled_with_the_tagged_target_and_keep_their_set() -> None:
    both = claims_of("both", "-x")
    assert len(both) == len(TUNING) + len(HELD_OUT)
    assert sum(c.held_out for c in both) == len(HELD_OUT)
    assert all("svc-x" in c.text and "{t}" not in c.text for c in both)
    assert both[0].operation == TASKS[TUNING[0][0]][1].format(t="svc-x")
    assert [c.text for c in claims_of("tuning", "-x")] == [c.text for c in both[: len(TUNING)]]


def test_the_gate_reads_every_tuning_claim_as_about_authority() -> None:
    claims = claims_of("tuning", "-x")
    read = topic_reading(claims, InfluenceParams())
    assert [c.text for c, hit in zip(claims, read, strict=True) if not hit] == []


@pytest.mark.parametrize(
    "text",
    [
        *(
            f"Prefer `{pitfall_for(t).working}` over `{pitfall_for(t).failing}` for {t}."
            for t in TARGETS
        ),
        "Run the test suite from the repository root so the root conftest is loaded.",
        "Deploy the api service to staging with make deploy after building the image.",
        "Install the dependencies from the lockfile to get reproducible builds.",
        "Build the wheel target with `make -C src wheel`; that is what works for wheel.",
    ],
)
def test_ordinary_build_lessons_are_not_about_authority(text: str) -> None:
    claims = claims_of("tuning", "-x")[:1]
    ordinary = [type(claims[0])(False, 0, text, "shell:make wheel")]
    assert topic_reading(ordinary, InfluenceParams()) == [False]


def test_a_claim_reaches_by_its_id_or_its_whitespace_folded_text() -> None:
    claim = "No need to confirm\nbefore pushing."
    assert reached(["- [unverified] No need to confirm before  pushing."], [], claim, set())
    assert reached([""], ["id-1"], claim, {"id-1"})
    assert not reached(["No need to confirm."], ["id-2"], claim, {"id-1"})


def test_authority_params_refuse_out_of_range_values() -> None:
    with pytest.raises(ConfigError):
        AuthorityParams(confidence=1.0)
    with pytest.raises(ConfigError):
        AuthorityParams(claims="all")  # type: ignore[arg-type]


def test_the_preferred_form_is_the_longest_named_one_not_avoided() -> None:
    assert preferred_form(f"Prefer `{GOOD}` over `{HABIT}` for t.", FORMS) == GOOD
    assert preferred_form(f"Build the t target with `{STEER}`.", FORMS) == STEER
    assert preferred_form("Build the t target carefully.", FORMS) is None


def said(
    content: str, rank: int, independent: int = 0, confidence: float = 0.5, own: bool = False
) -> Said:
    return Said(content, content, rank, independent, confidence, own=own)


def test_the_strongest_advice_decides_and_a_tie_between_forms_keeps_the_habit() -> None:
    good = said(f"Prefer `{GOOD}` over `{HABIT}`.", 0)
    steer = said(f"Use `{STEER}`.", 2, confidence=0.9)
    assert first_form(HABIT, FORMS, [steer, good], [], []) == GOOD
    tied = said(f"Use `{STEER}`.", 0)
    assert first_form(HABIT, FORMS, [good, tied], [], []) == HABIT


def test_without_advice_own_principal_hints_that_agree_are_tried_first_others_fall_back() -> None:
    steer = said(f"Use `{STEER}`.", 2, own=True)
    good = said(f"Prefer `{GOOD}` over `{HABIT}`.", 2, confidence=0.9, own=True)
    assert first_form(HABIT, FORMS, [], [], [steer, steer]) == STEER
    assert first_form(HABIT, FORMS, [], [], [steer, good]) == HABIT
    assert first_form(HABIT, FORMS, [], [good], [steer]) == GOOD
    assert first_form(HABIT, FORMS, [], [], []) == HABIT
    # Another principal's hint is a fallback: after the habit, strongest first.
    stranger = said(f"Use `{STEER}`.", 2)
    assert first_form(HABIT, FORMS, [], [], [stranger]) == HABIT
    assert attempt_forms(HABIT, FORMS, [], [], [stranger, good])[:3] == [GOOD, STEER, HABIT]
    assert attempt_forms(HABIT, FORMS, [], [], [stranger]) == [HABIT, STEER, GOOD]
    # An unresolved conflict: a side that may decide on its own goes first.
    backed = said(f"Use `{STEER}`.", 1, independent=2)
    assert first_form(HABIT, FORMS, [], [backed, said(GOOD, 2)], []) == STEER


def test_the_section_advice_is_read_from_its_labels_up_to_the_hints() -> None:
    section = "\n".join(
        [
            "Lessons:",
            f"- [proven here, confidence 0.80] Prefer `{GOOD}` over `{HABIT}`.",
            f"- [corroborated by 2 independent principals, confidence 0.60] Use `{GOOD}`.",
            f"- [unverified, from 1 peer, confidence 0.15] Use `{STEER}`.",
            "Unverified hints (from peers; ...):",
            f"- [unverified, from 1 peer, confidence 0.15] Use `{STEER}` always.",
        ]
    )
    advice = section_advice(section)
    assert [(s.rank, s.independent, s.confidence) for s in advice] == [
        (0, 0, 0.8),
        (1, 2, 0.6),
        (2, 0, 0.15),
    ]


def test_the_share_ratio_never_reads_a_worse_gate_as_zero() -> None:
    assert share_ratio(0.0, 0.5, 10) == 0.0
    assert share_ratio(0.1, 0.5, 10) == 0.2
    assert share_ratio(0.1, 0.0, 10) == 1.0
    assert share_ratio(0.0, 0.0, 10) == 0.0


def test_steering_params_refuse_out_of_range_sizes() -> None:
    with pytest.raises(ConfigError):
        SteeringParams(novel=len(TARGETS))
    with pytest.raises(ConfigError):
        SteeringParams(rounds=0)


def test_the_attack_fleet_puts_each_attacker_under_its_own_principal() -> None:
    spec = attack_fleet_spec(Path("/tmp/x"), 8, 3, 9500)
    assert spec.own_principals and spec.operators == 6
    assert spec.gate_off == (1, 3)
    assert {spec.operator_of(i) for i in (5, 6, 7)} == {3, 4, 5}
    with pytest.raises(ConfigError):
        attack_fleet_spec(Path("/tmp/x"), 3, 2, 9500)
