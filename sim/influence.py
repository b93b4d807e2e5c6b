"""What a simulated node shows its agent, by the influence gate (``learning/influence.py``):
each lesson's evidence at the node (proven there, corroborated by other honest nodes'
signed outcome attestations, about authority by the lexicon), the decision-time advice and
the plan-time hints, and the attestations that evidence reads."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from lamarck.consensus.corroboration import Support
from lamarck.fleet.agents import (
    Advice,
    AgentMemory,
    Said,
    attempt_order,
    says_prefer,
)
from lamarck.fleet.workloads import Pitfall
from lamarck.learning import influence as influence_core
from lamarck.learning.attribution import Effect
from lamarck.learning.influence import InfluenceParams
from lamarck.learning.prompt import format_line
from lamarck.sim.params import SimParams
from lamarck.sim.records import SimRecord
from lamarck.sim.state import SimCores, SimPeer

__all__ = ["Influence"]

#: Evidence answers kept at most (``Influence.evidence``): the counts in use at once are
#: about two per lesson held (proven here or not), a few dozen.
_EVIDENCE_KEPT = 256


class Influence:
    """The influence gate's view of the simulated nodes, and the attestations it reads."""

    def __init__(
        self,
        params: SimParams,
        cores: SimCores,
        records: Mapping[str, SimRecord],
        peers: Sequence[SimPeer],
    ) -> None:
        self.params = params
        self.cores = cores
        self.records = records
        self.peers = peers
        # The node's draws for unverified hints, from their own stream (the gate off draws
        # none, and changes no other draw).
        self._hint_rng = random.Random(f"hints:{params.seed}")
        #: Signed outcome attestations per lesson: honest nodes whose own outcome confirmed
        #: it, and those whose outcome contradicted it (each node its own principal).
        self.attest_confirm: dict[str, set[int]] = {}
        self.attest_contra: dict[str, set[int]] = {}
        #: Per lesson, the nodes whose attestations confirm it and none contradicts it (the
        #: confirming set less the contradicting one, kept as attestations are signed).
        self._confirmers: dict[str, set[int]] = {}
        #: The evidence rule's recent answers by what it reads of a simulated lesson (see
        #: :meth:`evidence`), and placeholder principal names by count.
        self._evidence_seen: dict[tuple[bool, int, bool], influence_core.LessonEvidence] = {}
        self._principal_names: list[str] = []
        self._authority: dict[str, bool] = {}

    def attest(self, node: int, lesson_id: str, effect: Effect) -> None:
        """The attestation ``node`` signs on ``lesson_id`` for its outcome's ``effect``: a
        confirmation, or a contradiction (which also takes the node out of the confirmers)."""
        if effect is Effect.CONFIRMED:
            self.attest_confirm.setdefault(lesson_id, set()).add(node)
            if node not in self.attest_contra.get(lesson_id, ()):
                self._confirmers.setdefault(lesson_id, set()).add(node)
        elif effect is Effect.CONTRADICTED:
            self.attest_contra.setdefault(lesson_id, set()).add(node)
            self._confirmers.get(lesson_id, set()).discard(node)

    def first_without(
        self, p: Pitfall, advice: Sequence[Advice], hints: Sequence[Said], left_out: set[str]
    ) -> str:
        """The form the agent would have tried first had ``left_out`` not been shown."""
        kept = [
            Advice(
                a.operation,
                a.preamble,
                tuple(x for x in a.lesson_ids if x not in left_out),
                tuple(x for x in a.lessons if x.lesson_id not in left_out),
                tuple(x for x in a.unresolved if x.lesson_id not in left_out),
            )
            for a in advice
        ]
        order, _ = attempt_order(
            p,
            kept,
            AgentMemory(),
            [x for x in hints if x.lesson_id not in left_out],
            pre_gate=not self.params.influence_gate,
        )
        return order[0]

    def shown(self, peer: SimPeer, p: Pitfall) -> tuple[list[Advice], list[Said]]:
        """What the node shows an agent at ``p``: the decision-time advice per form and the
        plan-time hints, by the influence gate (``learning/influence.py``) when
        ``SimParams.influence_gate`` is on."""
        gate = self.params.influence_gate
        params = self.cores.influence
        advice: list[Advice] = []
        hints: list[Said] = []
        deciding: list[tuple[tuple[int, int, float, str], influence_core.LessonEvidence, Said]]
        deciding = []
        for op in (p.failing, p.working):
            for c in peer.established.get(op, ()):
                lesson = c.lesson
                if not gate:
                    line = f"(confidence {lesson.confidence:.2f}) {format_line(lesson.content)}"
                    said = Said(lesson.lesson_id, lesson.content, 1, 0, lesson.confidence)
                    advice.append(Advice(op, line, (lesson.lesson_id,), (said,)))
                    continue
                ev = self.evidence(peer, lesson.lesson_id, op, lesson.content, params)
                said = Said(
                    lesson.lesson_id,
                    lesson.content,
                    ev.evidence_class.rank,
                    ev.independent,
                    lesson.confidence,
                )
                if ev.decides:
                    key = influence_core.evidence_order(ev, lesson.confidence, lesson.lesson_id)
                    deciding.append((key, ev, said))
                elif len(hints) < params.max_unverified_hints and influence_core.plan_hint(
                    ev, self._hint_rng.random(), params
                ):
                    hints.append(said)
        if not gate:
            return advice, hints
        # Lessons on one form agree; the two forms' lessons are a conflict, shown together:
        # the strongest of each side by evidence, and a side holds only by a stronger class.
        deciding.sort(key=lambda t: t[0])
        by_side: dict[str, list[Said]] = {}
        best: dict[str, influence_core.LessonEvidence] = {}
        for op, (_, ev, said) in ((self._side(p, t[2]), t) for t in deciding):
            by_side.setdefault(op, []).append(said)
            best.setdefault(op, ev)
        order = list(best)  # strongest side first
        lead = influence_core.conflict_leader([best[op] for op in order])
        if lead is not None:
            held = tuple(by_side[order[lead]])
            advice.append(Advice(order[lead], "", tuple(x.lesson_id for x in held), held))
        elif by_side:
            sides = tuple(x for op in order for x in by_side[op])
            advice.append(Advice(p.working, "", (), (), sides))
        return advice, hints

    @staticmethod
    def _side(p: Pitfall, said: Said) -> str:
        """The form a lesson at ``p`` recommends."""
        return p.failing if says_prefer(said.content, p.failing) else p.working

    def about_authority(
        self, h: str, operation: str, content: str, params: InfluenceParams
    ) -> bool:
        """The lexicon's reading of a lesson's topic (rule 3), read once per lesson: it
        reads the lesson's own words only."""
        found = self._authority.get(h)
        if found is None:
            found = influence_core.authority_by_lexicon(operation, (), content, params)
            self._authority[h] = found
        return found

    def evidence(
        self, peer: SimPeer, h: str, operation: str, content: str, params: InfluenceParams
    ) -> influence_core.LessonEvidence:
        """The lesson's evidence at ``peer``: proven here by its own outcomes, or corroborated
        by attestations of other honest nodes (the source's excluded; a node that attested
        both verdicts counts for neither).

        ``evidence_of`` reads a support's principals by their count only (its class, and
        what ``plan_hint``, ``evidence_order`` and ``conflict_leader`` read of it), and a
        simulated support has no contradicting principals and no certificate, so its answer
        is kept per (proven here, confirming principals, about authority), the principals
        named by count: building each node's set of principals at every turn grew with the
        network (thousands of attesters per honest lesson at N = 10,000). Only the recent
        answers are kept (``_EVIDENCE_KEPT``): one per count would hold a set of every size
        up to the attesters of the most attested lesson, gigabytes at N = 10,000.
        """
        origin = self.records[h].origin
        confirmers = self._confirmers.get(h, set())
        independent = len(confirmers) - sum(1 for i in {origin, peer.index} if i in confirmers)
        proven = h in peer.proven
        authority = self.about_authority(h, operation, content, params)
        key = (proven, independent, authority)
        found = self._evidence_seen.get(key)
        if found is None:
            if len(self._evidence_seen) >= _EVIDENCE_KEPT:
                self._evidence_seen.clear()
            names = self._principal_names
            names.extend(f"principal-{j}" for j in range(len(names), independent))
            found = influence_core.evidence_of(
                imported=True,
                local_confirmations=1 if proven else 0,
                support=Support(confirming=frozenset(names[:independent])),
                authority=authority,
                approved=False,
                params=params,
                checkable=True,  # every simulated lesson is a mechanical one (sim/records.py)
            )
            self._evidence_seen[key] = found
        return found

    def evidence_by_principal(
        self, peer: SimPeer, h: str, operation: str, content: str, params: InfluenceParams
    ) -> influence_core.LessonEvidence:
        """:meth:`evidence` with each node's principals named (the reference it is tested
        against: the same figures for a seeded run)."""
        origin = self.records[h].origin
        confirm = self.attest_confirm.get(h, set())
        contra = self.attest_contra.get(h, set())
        support = Support(
            confirming=frozenset(
                self.peers[i].node_id for i in confirm - contra - {origin, peer.index}
            ),
        )
        return influence_core.evidence_of(
            imported=True,
            local_confirmations=1 if h in peer.proven else 0,
            support=support,
            authority=self.about_authority(h, operation, content, params),
            approved=False,
            params=params,
            checkable=True,
        )
