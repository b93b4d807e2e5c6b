"""Lamarckian memory's learning loop over a node: REMEMBER → ASSESS → ENGAGE → HYPOTHESIZE → ACT →
OBSERVE → UPDATE → EXTRACT.

::

    loop = LearningLoop(client, project=project_digest("."), params=LoopParams(),
                        context_params=ContextParams(), clock=SystemClock(), rng=random.Random())
    report = loop.run(Task("fix the failing test", context={"domain": "python"}),
                      act=my_agent, session_id=session)

* **REMEMBER** — ``client.recall`` (the lessons become in play for the session). Only its
  advice (proven here or corroborated lessons) is assessed and may shape the prediction; its
  unverified hints and conflicts reach ACT labelled, never as a basis.
* **ASSESS** — each lesson's confidence adjusted by how alike its context is to the task's
  (the node's ``context_similarity``), and the critical dimensions that differ (Lamarckian memory
  "Context-Aware Knowledge Transfer": a critical difference means *do not transfer*).
* **ENGAGE** — Lamarckian memory's decision tree: ask, test, search, or proceed.
* **HYPOTHESIZE** — an explicit prediction (pass or fail, and how sure), recorded on the run.
* **ACT** — the agent's callback, which records its tool calls and checks on the recorder.
* **OBSERVE** — the recorder derives the outcome by the node's rules; prediction vs reality.
* **UPDATE** — ``client.record_outcome``: the node moves the lessons in play.
* **EXTRACT** — what was learned (created, confirmed, contradicted, or why nothing), and the
  loop's own meta-learning: prediction calibration and which context variables matter.

The loop is a thin edge: every decision is a pure function here (``assess``, ``engage``,
``hypothesize``), time and randomness are injected, and the node is reached through
:class:`LoopClient`, the three calls of ``lamarck.client.Client`` it uses.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from lamarck.agent.recorder import RunRecorder
from lamarck.agent.run import RunParams, RunResult
from lamarck.client import Conflict, Lesson, OutcomeResult, RecallResult
from lamarck.learning.context_match import (
    context_similarity,
    critical_differences,
    normalise_context,
)
from lamarck.learning.params import ContextParams
from lamarck.params_checks import check_int, check_range, check_rule
from lamarck.proto.clock import Clock
from lamarck.proto.outcome import Outcome

__all__ = [
    "ActContext",
    "ActReport",
    "Assessment",
    "Calibration",
    "Engagement",
    "Extracted",
    "Hypothesis",
    "LearningLoop",
    "LoopClient",
    "LoopParams",
    "LoopReport",
    "Observation",
    "Phase",
    "Task",
    "VariableImportance",
    "assess",
    "best_confidence",
    "engage",
    "hypothesize",
]

Expected = Literal["pass", "fail"]
# Even odds: a pass probability at or above it predicts a pass (a definition, not a tunable).
_EVEN = 0.5


class Phase(StrEnum):
    """The eight phases, in the order a run goes through them."""

    REMEMBER = "remember"
    ASSESS = "assess"
    ENGAGE = "engage"
    HYPOTHESIZE = "hypothesize"
    ACT = "act"
    OBSERVE = "observe"
    UPDATE = "update"
    EXTRACT = "extract"


@dataclass(frozen=True, slots=True)
class LoopParams:
    """Every number of the loop (Lamarckian memory's thresholds), validated when built."""

    # Lessons asked of the node per task (Lamarckian memory REMEMBER: 10). Integer in [1, 100].
    recall_limit: int = 10
    # Lessons below this confidence are not assessed (Lamarckian memory REMEMBER: 0.3). [0, 1].
    min_confidence: float = 0.3
    # ENGAGE: collaborative work with the user there asks below this
    # (Lamarckian memory: 0.6). [0, 1].
    ask_below: float = 0.6
    # ENGAGE: a testable, low-risk task is tested first below this (Lamarckian memory: 0.7). [0, 1].
    test_below: float = 0.7
    # ENGAGE: documented tasks are searched below this (Lamarckian memory: 0.5). [0, 1].
    search_below: float = 0.5
    # HYPOTHESIZE: the chance of a pass with no applicable lesson. [0, 1].
    prior_pass: float = 0.5
    # EXTRACT: observations of a variable before its importance is judged
    # (Lamarckian memory: 3). >= 1.
    importance_min_observations: int = 3
    # EXTRACT: error rate when a variable differs above which it is critical (Lamarckian memory:
    # 0.7), important (0.4) and minor (0.2); below minor it is negligible. 0 <= minor <= important
    # <= critical <= 1.
    critical_error_rate: float = 0.7
    important_error_rate: float = 0.4
    minor_error_rate: float = 0.2

    def __post_init__(self) -> None:
        """Validate every field and the order of the error-rate bands."""
        check_int("recall_limit", self.recall_limit, 1, 100)
        check_int("importance_min_observations", self.importance_min_observations, 1)
        for name in (
            "min_confidence",
            "ask_below",
            "test_below",
            "search_below",
            "prior_pass",
            "critical_error_rate",
            "important_error_rate",
            "minor_error_rate",
        ):
            check_range(name, getattr(self, name), 0.0, 1.0)
        check_rule(
            self.minor_error_rate <= self.important_error_rate <= self.critical_error_rate,
            "important_error_rate",
            "must lie between minor_error_rate and critical_error_rate",
        )


@dataclass(frozen=True, slots=True)
class Task:
    """What the agent is asked to do, and what ENGAGE needs to know about it."""

    goal: str
    context: Mapping[str, Any] = field(default_factory=dict)
    collaborative: bool = False  # working with a user...
    user_available: bool = False  # ...who can answer now
    involves_preferences: bool = False  # a matter of taste: only the user can say
    testable: bool = True  # a cheap empirical test exists
    low_risk: bool = True  # testing it cannot hurt anything
    has_documentation: bool = False


# -- ASSESS -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assessment:
    """One recalled lesson judged against this task's context (Lamarckian memory ASSESS)."""

    lesson: Lesson
    context_match: float  # in [0, 1]
    confidence: float  # the lesson's confidence × context_match
    critical_differences: tuple[str, ...]  # critical dimensions both state differently

    @property
    def transferable(self) -> bool:
        """No critical variable differs (Lamarckian memory: otherwise "cannot transfer")."""
        return not self.critical_differences


def assess(
    lessons: Sequence[Lesson],
    context: Mapping[str, Any],
    *,
    params: LoopParams,
    context_params: ContextParams,
) -> list[Assessment]:
    """Context-adjusted confidence of each lesson, best first (ties: recall order)."""
    out = []
    for lesson in lessons:
        if lesson.confidence < params.min_confidence:
            continue
        match = context_similarity(lesson.context, context, context_params)
        out.append(
            Assessment(
                lesson,
                match,
                lesson.confidence * match,
                tuple(critical_differences(lesson.context, context, context_params)),
            )
        )
    return sorted(out, key=lambda a: -a.confidence)


# -- ENGAGE -----------------------------------------------------------------------------------


class Engagement(StrEnum):
    """What to do before acting (Lamarckian memory ENGAGE)."""

    ASK = "ask"
    TEST = "test"
    SEARCH = "search"
    PROCEED = "proceed"


def best_confidence(assessments: Sequence[Assessment]) -> float:
    """The highest context-adjusted confidence among transferable lessons (0 if none)."""
    return max((a.confidence for a in assessments if a.transferable), default=0.0)


def engage(task: Task, confidence: float, *, params: LoopParams) -> Engagement:
    """Lamarckian memory's decision tree: ask a present collaborator, test cheaply, search, or
    proceed."""
    if (
        task.collaborative
        and task.user_available
        and (confidence < params.ask_below or task.involves_preferences)
    ):
        return Engagement.ASK
    if task.testable and task.low_risk and confidence < params.test_below:
        return Engagement.TEST
    if task.has_documentation and confidence < params.search_below:
        return Engagement.SEARCH
    return Engagement.PROCEED


# -- HYPOTHESIZE ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """An explicit prediction before acting (Lamarckian memory HYPOTHESIZE)."""

    expected: Expected
    confidence: float  # how sure the agent is of ``expected``, in [0, 1]
    basis: tuple[str, ...]  # the lessons it rests on
    assumptions: tuple[str, ...]  # what must hold for it (critical differences noted)

    @property
    def p_pass(self) -> float:
        """The predicted chance of a pass."""
        return self.confidence if self.expected == "pass" else 1.0 - self.confidence

    @property
    def text(self) -> str:
        """Lamarckian memory's template, filled in."""
        basis = ", ".join(self.basis) if self.basis else "no prior lesson"
        lines = [f"Based on {basis}, I expect the run to {self.expected}."]
        lines.append(f"Confidence: {self.confidence:.2f}")
        lines.extend(f"Assumption: {a}" for a in self.assumptions)
        return "\n".join(lines)


def hypothesize(assessments: Sequence[Assessment], *, params: LoopParams) -> Hypothesis:
    """The default prediction: a pass as likely as the best transferable lesson is sure.

    With no transferable lesson the chance of a pass is ``prior_pass``. A lesson that does not
    transfer is noted as an assumption that does not hold, never used as the basis.
    """
    usable = [a for a in assessments if a.transferable]
    p_pass = max([params.prior_pass, *(a.confidence for a in usable)])
    best = max(usable, key=lambda a: a.confidence, default=None)
    basis = (best.lesson.id,) if best is not None and best.confidence >= params.prior_pass else ()
    assumptions = tuple(
        f"lesson {a.lesson.id} was learned where {', '.join(a.critical_differences)} differ"
        for a in assessments
        if not a.transferable
    )
    expected: Expected = "pass" if p_pass >= _EVEN else "fail"
    return Hypothesis(expected, max(p_pass, 1.0 - p_pass), basis, assumptions)


# -- ACT, OBSERVE, EXTRACT ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ActContext:
    """What the agent's callback gets: the task, what is known, and the recorder to use."""

    task: Task
    section: str  # the node's "Lessons:" prompt section
    assessments: tuple[Assessment, ...]
    engagement: Engagement
    hypothesis: Hypothesis
    recorder: RunRecorder
    #: Unverified peer lessons the section shows as hints: never advice, never assessed;
    #: one whose source is of the node's own principal (``Evidence.own_principal``) may be
    #: tried first where a wrong try is cheap, any other only once the agent's own way failed.
    hints: tuple[Lesson, ...] = ()
    #: Lessons that disagree, strongest evidence first (``Conflict.holds``: the side that
    #: holds, "" while unresolved: then the agent tries first the side that differs from
    #: what it would do anyway, and the outcome settles the conflict).
    conflicts: tuple[Conflict, ...] = ()


@dataclass(frozen=True, slots=True)
class ActReport:
    """What the callback says about its own answer (all optional)."""

    claim_ok: bool = True  # the answer claims only checks that ran
    injected_instruction: bool = False  # a tool result carried an injected instruction
    dismissed: tuple[str, ...] = ()  # recalled lessons it judged wrong here (not in play)


@dataclass(frozen=True, slots=True)
class Observation:
    """Reality against the prediction (Lamarckian memory OBSERVE), without interpretation."""

    expected: Expected
    actual: Expected
    match: bool
    unexpected_success: bool  # the highest learning opportunity


@dataclass(frozen=True, slots=True)
class Extracted:
    """What the run taught: lesson changes on the node, or why nothing."""

    created: tuple[str, ...]
    confirmed: tuple[str, ...]
    contradicted: tuple[str, ...]
    nothing_learned: str  # "" when a lesson comes out of the run


@dataclass(slots=True)
class Calibration:
    """Running prediction accuracy and Brier score (Lamarckian memory: enables calibration)."""

    predictions: int = 0
    correct: int = 0
    brier_sum: float = 0.0

    def add(self, hypothesis: Hypothesis, actual: Expected) -> None:
        """Count one prediction against what happened."""
        p_pass = (
            hypothesis.confidence if hypothesis.expected == "pass" else 1 - hypothesis.confidence
        )
        outcome = 1.0 if actual == "pass" else 0.0
        self.predictions += 1
        self.correct += int(hypothesis.expected == actual)
        self.brier_sum += (p_pass - outcome) ** 2

    @property
    def accuracy(self) -> float | None:
        """Share of predictions that came true (None before the first)."""
        return self.correct / self.predictions if self.predictions else None

    @property
    def brier(self) -> float | None:
        """Mean squared error of the pass probability (0 is perfect; None before the first)."""
        return self.brier_sum / self.predictions if self.predictions else None


@dataclass(slots=True)
class VariableImportance:
    """Which context variables matter, learned from predictions (Lamarckian memory EXTRACT).

    Each time a lesson shaped a prediction, every dimension in which its context differed
    from the task's is counted, as a correct or a wrong prediction. A variable whose
    differences keep coming with wrong predictions is critical.
    """

    params: LoopParams
    _seen: dict[str, list[int]] = field(default_factory=dict)  # variable -> [correct, wrong]

    def add(self, differing: Sequence[str], *, correct: bool) -> None:
        """Count one prediction made across these differing variables."""
        for var in differing:
            counts = self._seen.setdefault(var, [0, 0])
            counts[0 if correct else 1] += 1

    def importance(self, variable: str) -> str:
        """critical, important, minor or negligible (minor until enough observations)."""
        correct, wrong = self._seen.get(variable, [0, 0])
        total = correct + wrong
        if total < self.params.importance_min_observations:
            return "minor"
        rate = wrong / total
        if rate > self.params.critical_error_rate:
            return "critical"
        if rate > self.params.important_error_rate:
            return "important"
        if rate > self.params.minor_error_rate:
            return "minor"
        return "negligible"


def _differing(lesson: Lesson, context: Mapping[str, Any], p: ContextParams) -> list[str]:
    """Every known dimension both contexts state with different values."""
    a, b = normalise_context(lesson.context, p), normalise_context(context, p)
    return sorted(d for d in a.keys() & b.keys() if a[d] != b[d])


# -- the loop -----------------------------------------------------------------------------------


class LoopClient(Protocol):
    """The node calls the loop makes (``lamarck.client.Client`` has them)."""

    def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None = None,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        limit: int = 0,
    ) -> RecallResult:
        """Plan-time recall."""
        ...

    def record_outcome(self, outcome: Outcome | Mapping[str, Any] | bytes | str) -> OutcomeResult:
        """Record one turn's outcome."""
        ...


#: The agent's ACT: do the work, recording it on ``ctx.recorder``.
ActFn = Callable[[ActContext], ActReport | None]


@dataclass(frozen=True, slots=True)
class LoopReport:
    """Everything one pass of the loop saw and decided, phase by phase."""

    phases: tuple[Phase, ...]
    recalled: RecallResult
    assessments: tuple[Assessment, ...]
    engagement: Engagement
    hypothesis: Hypothesis
    result: RunResult
    observation: Observation
    update: OutcomeResult
    extracted: Extracted


class LearningLoop:
    """Runs tasks through the eight phases over a node (sync; one instance per agent)."""

    def __init__(
        self,
        client: LoopClient,
        *,
        project: str,
        params: LoopParams,
        context_params: ContextParams,
        run_params: RunParams,
        clock: Clock,
        rng: random.Random,
    ) -> None:
        """``project`` is the project digest (``lamarck.agent.project_digest``)."""
        self._client = client
        self._project = project
        self._params = params
        self._context_params = context_params
        self._run_params = run_params
        self._clock = clock
        self._rng = rng
        self.calibration = Calibration()
        self.importance = VariableImportance(params)

    def run(
        self,
        task: Task,
        act: ActFn,
        *,
        session_id: str,
        turn_index: int = 0,
        hypothesis: Callable[[Sequence[Assessment]], Hypothesis] | None = None,
    ) -> LoopReport:
        """One task through all eight phases; ``hypothesis`` overrides the default prediction."""
        phases: list[Phase] = []
        # REMEMBER
        phases.append(Phase.REMEMBER)
        recalled = self._client.recall(
            task.goal,
            dict(task.context),
            session_id=session_id,
            turn_index=turn_index,
            project_digest=self._project,
            limit=self._params.recall_limit,
        )
        # ASSESS
        phases.append(Phase.ASSESS)
        assessments = tuple(
            assess(
                recalled.lessons,
                task.context,
                params=self._params,
                context_params=self._context_params,
            )
        )
        # ENGAGE
        phases.append(Phase.ENGAGE)
        engagement = engage(task, best_confidence(assessments), params=self._params)
        # HYPOTHESIZE: explicit, and recorded before anything runs
        phases.append(Phase.HYPOTHESIZE)
        guess = (
            hypothesis(assessments) if hypothesis else hypothesize(assessments, params=self._params)
        )
        recorder = RunRecorder(
            session_id=session_id,
            goal=task.goal,
            project=self._project,
            turn_index=turn_index,
            clock=self._clock,
            rng=self._rng,
            params=self._run_params,
        )
        recorder.predict(guess.expected, guess.confidence)
        # ACT
        phases.append(Phase.ACT)
        ctx = ActContext(
            task,
            recalled.section,
            assessments,
            engagement,
            guess,
            recorder,
            recalled.hints,
            recalled.conflicts,
        )
        report = act(ctx) or ActReport()
        dismissed = set(report.dismissed)
        recorder.lessons_in_play(x.id for x in recalled.lessons if x.id not in dismissed)
        # OBSERVE
        phases.append(Phase.OBSERVE)
        result = recorder.finish(
            claim_ok=report.claim_ok, injected_instruction=report.injected_instruction
        )
        actual: Expected = "pass" if result.outcome.passed else "fail"
        observation = Observation(
            guess.expected,
            actual,
            guess.expected == actual,
            actual == "pass" and guess.expected == "fail",
        )
        # UPDATE
        phases.append(Phase.UPDATE)
        update = self._client.record_outcome(result.outcome)
        # EXTRACT
        phases.append(Phase.EXTRACT)
        extracted = Extracted(
            created=tuple(update.ids("created")),
            confirmed=tuple(update.ids("confirmed")),
            contradicted=tuple(update.ids("contradicted")),
            # The node's reason; a node that sends none gets the run's own forecast.
            nothing_learned=update.nothing_learned
            or ("" if update.changes else result.nothing_learned),
        )
        self.calibration.add(guess, actual)
        for a in assessments:
            if a.lesson.id in guess.basis:
                differing = _differing(a.lesson, task.context, self._context_params)
                self.importance.add(differing, correct=observation.match)
        return LoopReport(
            tuple(phases),
            recalled,
            assessments,
            engagement,
            guess,
            result,
            observation,
            update,
            extracted,
        )
