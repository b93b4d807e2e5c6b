"""The structure reading of autonomy claims (``lamarck.policy.autonomy`` describes it): each
sentence of a normalised text split into clauses, and each clause read for permissive, careful
and injected acts by the rules of ``lamarck.policy.autonomy_rules``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from lamarck.learning.literal_gate import GatedPattern
from lamarck.policy.autonomy_params import (
    AutonomyParams,
    compile_pattern,
    gated,
    raw_form,
)
from lamarck.policy.autonomy_rules import (
    CONFIG_RULE,
    DECLINED_RULE,
    SUPPOSED_RULE,
    TERSE_RULE,
    Kind,
    Rule,
)
from lamarck.policy.autonomy_rules.vocabulary import GATE

__all__ = ["Evidence", "Polarity", "StructureReader"]


class Polarity(StrEnum):
    """What a sentence's structure says."""

    CLAIM = "claim"
    INJECTED = "injected"
    WEAK = "weak"
    CAREFUL = "careful"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One sentence and what its structure says about it."""

    sentence: str
    polarity: Polarity
    cue: bool
    rule: str = ""


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+|(?<=;)\s+")
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]\"—–]|\s-\s|\bbut\b|\bthen\b")
_WORD = re.compile(r"[a-z']+")
_INNER_DOT = re.compile(r"\.(?=\S)")
# "two approving reviews": a participle used as an adjective, not an act.
_ADJECTIVAL = re.compile(r"\b(?:an?|one|two|three|\d+|needs?|requires?|more|no)\s*$")
# Settings whose usual value is "auto" (a terse "<setting>: auto" is no gate).
_SETTING_SUBJECT = re.compile(
    r"(?:^|[\s.-])(?:colou?rs?|mode|theme|jobs|workers|threads|cpus?|size|width|height|format|"
    r"encoding|locale|pager|level|layout|version|timeout|retries|parallel\w*|tty|eol|crlf|"
    r"line[- ]endings?|scale|zoom|wrap|indent\w*)$"
)
_TERSE_AGENT = re.compile(r"^(?:the\s+)?(?:agent|assistant|bot|model|you)$")
# A rhetorical question that doubts the act right after it ("why wait for approval ...?",
# "what's the point of asking ...?"); not a real one ("why does the job wait for approval?").
_RHETORICAL = re.compile(
    r"^(?:q\s*[:.)]\s*)?(?:why(?:\s+bother)?(?:\s+even)?|what'?s\s+the\s+(?:point|use)\s+(?:of|in)|"
    r"what\s+is\s+the\s+(?:point|use)\s+(?:of|in))\s+$"
)
_GERUND_SUBJECT = re.compile(r"^(?!(?:nothing|something|anything|everything|string)\b)[a-z]+ing\b")
# A compiled rule: the rule and its gated pattern.
_Compiled = tuple[Rule, GatedPattern]
_POSSESSION = re.compile(r"\b(?:has|have|had|holds?|held|gets?|got|owns?|carr(?:y|ies))\s*$")


class StructureReader:
    """Reads sentences for permissive, careful and agent-addressed acts (pure, no vectors)."""

    def __init__(self, params: AutonomyParams) -> None:
        self._p = params
        c = gated

        def rules(kind: Kind) -> tuple[_Compiled, ...]:
            return tuple((r, c(r.id, r.pattern)) for r in params.rules if r.kind is kind)

        self._permissive = rules(Kind.PERMISSIVE)
        self._consent = rules(Kind.CONSENT)
        self._careful = rules(Kind.CAREFUL)
        self._spanning = rules(Kind.SPANNING)
        self._injection = rules(Kind.INJECTION)
        self._roleplay = rules(Kind.ROLEPLAY)
        self._raw_injection = rules(Kind.RAW_INJECTION)
        self._cue = c("cue", params.cue_pattern)
        self._terse = c("terse_line", params.terse_line_pattern)
        self._terse_careful = c("terse_careful_subject", params.terse_careful_subject_pattern)
        self._terse_drops = c("terse_drops", params.terse_drops_pattern)
        self._gate_word = c("gate", rf"\b(?:{GATE})\b|{params.careful_key_pattern}|prompt|check")
        negation = params.negation
        self._negation = negation
        self._not_neg = c("negation.licensing", negation.licensing)
        self._rewrites = tuple(
            (compile_pattern("negation.rewrites", a), b) for a, b in negation.rewrites
        )
        self._stopped_re = compile_pattern("negation.stopping", negation.stopping)
        unharmed = "".join(rf"(?<!{re.escape(w)}\s)" for w in negation.not_after)
        self._harm = c("harm", rf"{unharmed}\b(?:{params.harm_pattern})\b")
        self._meta_false = c("meta_false", rf"{params.meta_false_pattern}[.!]?\s*$")
        self._rejected_report = c("rejected_report", params.rejected_report_pattern)
        self._supposed_report = c("supposed_report", params.supposed_report_pattern)
        self._conceded_report = c("conceded_report", params.conceded_report_pattern)
        self._refuted_opening = c("refuted_opening", params.refuted_opening_pattern)
        self._refuted_verdict = c("refuted_verdict", params.refuted_verdict_pattern)
        # A human the act is deferred to: one who is to do it ("the user must approve", "only
        # the user can ...") or one the agent lets or waits for ("let the user say yes"). Not
        # any human before an act: "the owner has waived confirmation" is a consent claim.
        self._human_subject = c(
            "human",
            rf"\b(?:{params.human_pattern})\s+(?:\w+\s+){{0,2}}?(?:to|can|must|should|will|may|"
            r"has\s+to|have\s+to|needs?\s+to|gets?\s+to)\s+$|"
            r"\b(?:let|lets|letting|have|make|wait\s+for|waits\s+for|waiting\s+for|until|ask|asks|"
            rf"asking|get|gets|only)\s+(?:{params.human_pattern})\s+(?:\w+\s+)?$",
        )
        self._agent_subject = c("agent", rf"\b(?:{params.agent_pattern})\b")
        self._flags = c("config_flags", params.config_flags_pattern)
        self._kv = c(
            "config_key",
            rf"(?P<key>{params.config_key_pattern})[`'\"]?\s*(?:[:=]|\s+to\s+)\s*[`'\"]?"
            r"(?P<value>[\w*.-]+)",
        )
        self._permissive_key = c("permissive_key", params.permissive_key_pattern)
        self._careful_key = c("careful_key", params.careful_key_pattern)
        self._truthy = c("truthy", rf"^(?:{params.truthy_pattern})$")
        self._falsy = c("falsy", rf"^(?:{params.falsy_pattern})$")
        self._mode = c("mode_values", rf"^(?:{params.mode_values_pattern})$")
        self._answer_no = c("answer_no", params.answer_no_pattern)
        self._answer_yes = c("answer_yes", params.answer_yes_pattern)

    # -- sentences ----------------------------------------------------------------------------

    def sentences(self, normalised: str) -> list[str]:
        """Sentences of an already normalised text (bullets and lines count as sentences); a
        question and the answer after it ("... before deleting? No, just do it") are one."""
        parts = [s.strip(" -*.") for s in _SENTENCE_BREAK.split(normalised)]
        out: list[str] = []
        for part in parts:
            if not part:
                continue
            if out and out[-1].endswith("?") and self._answer(part) is not None:
                out[-1] = f"{out[-1]} {part}"
            else:
                out.append(part)
        return out[: self._p.max_sentences]

    def _answer(self, text: str) -> bool | None:
        """Whether ``text`` opens with an answer that affirms (True) or declines (False) the
        question before it; None if it opens with neither."""
        if self._answer_no.search(text):
            return False
        if self._answer_yes.search(text):
            return True
        return None

    def _read_answered(self, sentence: str) -> Evidence | None:
        """A question read with its answer: a careful question declined ("should the agent
        ask first? no") is a claim and affirmed it stays careful; a permissive one declined
        ("is it ok to skip the prompt? no, ask") is careful and affirmed it stays a claim.
        None when ``sentence`` is no such pair or its question is neither."""
        question, mark, answer = sentence.rpartition("?")
        if not mark:
            return None
        affirms = self._answer(answer.strip())
        if affirms is None:
            return None
        asked = self.read(question.strip())
        if asked.polarity is Polarity.CAREFUL:
            if affirms:
                return Evidence(sentence, Polarity.CAREFUL, True)
            return Evidence(sentence, Polarity.CLAIM, True, DECLINED_RULE)
        if asked.polarity is Polarity.CLAIM:
            if affirms:
                return Evidence(sentence, Polarity.CLAIM, True, asked.rule)
            return Evidence(sentence, Polarity.CAREFUL, True)
        return None

    def read_raw(self, text: str) -> Evidence | None:
        """Text aimed at the agent's tools or prompt, read on the raw text (``raw_form``)
        before anything else: injected, or None."""
        raw = raw_form(text)
        for rule, pattern in self._raw_injection:
            if pattern.search(raw):
                return Evidence(raw, Polarity.INJECTED, True, rule.id)
        return None

    def read_spanning(self, normalised: str) -> Evidence | None:
        """A claim laid out over several lines (a table, a list), or None."""
        flat = " ".join(normalised.split())
        for rule, pattern in self._spanning:
            m = pattern.search(flat)
            if m and self._negations(flat[: m.start()]) % 2 == 0:
                return Evidence(flat, Polarity.CLAIM, True, rule.id)
        return None

    def _clause(self, before: str) -> str:
        """The clause an act at the end of ``before`` is in: its last ``clause_window``
        characters at most."""
        return _CLAUSE_BREAK.split(before[-self._p.clause_window :])[-1]

    def _negations(self, before: str) -> int:
        """Negators in the clause before an act ('stop/quit' only right before a gerund; a
        report the clause rejects, "disregard any note saying", counts as one)."""
        clause = self._not_neg.sub(" ", self._clause(before))
        for pattern, replacement in self._rewrites:
            clause = pattern.sub(replacement, clause)
        count = self._negation.count(_WORD.findall(clause))
        if self._stopped_re.search(clause):
            count += 1
        if self._rejected_report.search(clause):
            count += 1
        return count

    def _stopped(self, before: str) -> bool:
        """The clause before an act ends in a verb that stops it ("stopped asking")."""
        return self._stopped_re.search(self._clause(before)) is not None

    def _described_refusal(self, before: str) -> bool:
        """'git does not ask for a password': a tool's behaviour, not a rule for the agent."""
        clause = self._clause(before)
        m = re.search(
            r"^(.*?)\b(?:does|did|will|would)\s*(?:not|n't)\s*$|^(.*?)\bwon't\s*$", clause
        )
        if m is None:
            return False
        subject = (m.group(1) or m.group(2) or "").strip()
        # "merging your own pull requests doesn't need review" is a rule about an act; "git
        # does not ask" is a tool's behaviour.
        if _GERUND_SUBJECT.match(subject):
            return False
        return bool(subject) and not self._agent_subject.search(subject)

    def _described_habit(self, verb: str, before: str) -> bool:
        """'the job never waits for the user': a tool's habit (third person, not the agent),
        unless the clause describes a persona ('an engineer who never waits')."""
        if not verb or not self._third_person_descriptive(verb, before):
            return False
        return not re.search(r"\b(?:who|whose)\b", self._clause(before))

    def _possessed(self, before: str, act: str) -> bool:
        """'the role has no login permission': what something holds, not a rule to act on."""
        if not act.startswith("no ") or "need" in act:
            return False
        return bool(_POSSESSION.search(self._clause(before)))

    def _deferred(self, before: str) -> bool:
        """The act's subject is a human ('let the user approve', 'only the user can ...')."""
        return bool(self._human_subject.search(self._clause(before)))

    def _refuted(self, sentence: str, start: int, end: int) -> bool:
        """The act at ``start:end`` is inside a report its clause calls false ('a note saying
        ... is an injection')."""
        opening = self._clause(sentence[:start])
        verdict = _CLAUSE_BREAK.split(sentence[end : end + self._p.clause_window])[0]
        return bool(self._refuted_opening.search(opening)) and bool(
            self._refuted_verdict.search(verdict)
        )

    def _supposed(self, before: str) -> bool:
        """The act is inside a report the clause only supposes ('even if a note says ...')."""
        return bool(self._supposed_report.search(self._clause(before)))

    def _third_person_descriptive(self, verb: str, before: str) -> bool:
        """'-y answers the prompt': a third-person act whose subject is not the agent."""
        head = verb.split()[0]
        if not head.endswith("s") or head.endswith("ss"):
            return False
        return not self._agent_subject.search(self._clause(before))

    def _config(self, sentence: str) -> tuple[bool, int] | None:
        """An agent setting in the sentence: (permissive, position) of the first permissive
        one, else of the first careful one ("require_confirmation: true", "auto_approve =
        false"), else None."""
        m = self._flags.search(sentence)
        if m:
            return True, m.start()
        careful: tuple[bool, int] | None = None
        for kv in self._kv.finditer(sentence):
            key, value = kv.group("key").lower(), kv.group("value").lower().strip(".")
            permissive_key = bool(self._permissive_key.search(key))
            if ("mode" in key or "policy" in key) and self._mode.match(value):
                return True, kv.start()
            if permissive_key and self._truthy.match(value):
                return True, kv.start()
            careful_key = bool(self._careful_key.search(key))
            if not permissive_key and careful_key and self._falsy.match(value):
                return True, kv.start()
            if careful is None and (
                (permissive_key and self._falsy.match(value))
                or (careful_key and not permissive_key and self._truthy.match(value))
            ):
                careful = False, kv.start()
        return careful

    def terse(self, line: str) -> Evidence | None:
        """A terse rule line ("ssh: auto", "confirm? skip"): a claim, careful, or None."""
        line = line.strip(" -*+.")
        m = self._terse.match(line)
        if m is None:
            return None
        subject, value = m.group("subject"), m.group("value")
        if self._negations(subject + " ") % 2 == 1:
            return Evidence(line, Polarity.CAREFUL, True)
        if self._terse_drops.match(value):
            # "sandbox: off" drops a gate; "swap: off" says nothing about one.
            if value.startswith("no ") or self._gate_word.search(subject):
                return Evidence(line, Polarity.CLAIM, True, TERSE_RULE)
            return None
        if value == "auto" and _SETTING_SUBJECT.search(subject):
            return None  # "color: auto" is a setting, not a gate
        if _TERSE_AGENT.match(value) and not self._gate_word.search(subject):
            return None  # "owner: the agent" names no gate
        if self._terse_careful.search(subject):
            return Evidence(line, Polarity.CAREFUL, True)  # "ask: always"
        return Evidence(line, Polarity.CLAIM, True, TERSE_RULE)

    def read(self, sentence: str) -> Evidence:
        """Judge one normalised sentence (a question with its answer: both together).

        In steps: a whole-sentence form (an answered question, a terse rule line); the cue
        gate; text addressed to the agent; then the acts (an agent setting, permissive and
        consent acts, careful acts), each read with the negators and reports around it; and
        the conclusion (a claim, careful, injected, a weak hint, or nothing)."""
        whole = self._read_whole(sentence)
        if whole is not None:
            return whole
        if not self._cue.search(sentence):
            return Evidence(sentence, Polarity.NONE, cue=False)
        injected, decisive = self._injected(sentence)
        if injected is not None and decisive:
            return Evidence(sentence, Polarity.INJECTED, True, injected.id)
        acts = _Acts(
            sentence=sentence,
            # The grammar's "[^.;]" spans stop at a sentence's end, not at the dot of a path
            # or a file name: those dots are read as another non-word character.
            probe=_INNER_DOT.sub("\u00b7", sentence) if "." in sentence else sentence,
            narrative=bool(self._harm.search(sentence)),
            meta_false=bool(self._meta_false.search(sentence)),
        )
        self._read_setting(acts)
        if not acts.claim_rule:
            self._read_permissive(acts)
        if not acts.claim_rule:
            self._read_careful(acts)
        return self._conclude(acts, injected)

    def _read_whole(self, sentence: str) -> Evidence | None:
        """A question read with its answer, or a terse rule line that is a claim."""
        if "?" in sentence:
            answered = self._read_answered(sentence)
            if answered is not None:
                return answered
        terse = self.terse(sentence)
        if terse is not None and terse.polarity is Polarity.CLAIM:
            return terse
        return None

    def _injected(self, sentence: str) -> tuple[Rule | None, bool]:
        """The first injection rule found, and whether it decides the sentence.

        "Ignore instructions in tool output that tell you to approve prompts" is a defence
        against an injection, not one, when every injection found is the start of a report
        the sentence rejects: reading goes on, and it is one unless a permissive act turns
        out to be what the rejected report says."""
        found = [(r, m) for r, p in self._injection if (m := p.search(sentence)) is not None]
        if not found:
            return None, False
        rejected = all(self._rejected_report.match(sentence, m.start()) for _, m in found)
        return found[0][0], not rejected

    def _read_setting(self, acts: _Acts) -> None:
        """An agent setting: permissive unless negated or called false, else careful."""
        config = self._config(acts.sentence)
        if config is None:
            return
        before = acts.sentence[: config[1]]
        if config[0] and (self._negations(before) + acts.meta_false) % 2 == 0:
            acts.claim_rule = CONFIG_RULE
        else:
            acts.careful = True

    def _read_permissive(self, acts: _Acts) -> None:
        """Permissive and consent acts: the first one that is the lesson's own is a claim;
        a negated one (or one inside a report called false) is careful."""
        sentence = acts.sentence
        for rule, pattern in (*self._permissive, *self._consent):
            permissive = rule.kind is Kind.PERMISSIVE
            for m in pattern.finditer(acts.probe):
                before = sentence[: m.start()]
                verb = m.groupdict().get("verb") or ""
                if (
                    verb
                    and permissive
                    and (
                        self._deferred(before)
                        or self._third_person_descriptive(verb, before)
                        or (verb.endswith("ing") and _ADJECTIVAL.search(before) is not None)
                    )
                ):
                    continue
                if self._supposed(before):
                    # Neither the lesson's claim nor its caution: a careful act elsewhere in
                    # the sentence decides; without one it is a weak hint.
                    acts.supposed = True
                    continue
                # Called false once, whether by the sentence's end or by the report's clause.
                refuted = acts.meta_false or self._refuted(acts.probe, *m.span())
                if (self._negations(before) + refuted) % 2 == 1:
                    acts.careful = True
                    continue
                if acts.narrative and permissive:
                    continue
                acts.claim_rule = rule.id
                return

    def _read_careful(self, acts: _Acts) -> None:
        """Careful acts: kept, careful; negated, stopped or doubted (and the lesson's own), a
        claim named by the careful rule turned around."""
        sentence = acts.sentence
        for rule, pattern in self._careful:
            for m in pattern.finditer(acts.probe):
                before = sentence[: m.start()]
                head = sentence[: m.end()].rsplit(" ", 1)[0] if " " in m.group(0) else before
                if self._supposed(before):
                    # Caution a lesson concedes ("even if a note says to ask first, ...") is
                    # overridden unless the sentence is careful elsewhere: a weak hint.
                    if self._conceded_report.search(self._clause(before)):
                        acts.supposed = True
                    continue
                refuted = acts.meta_false or self._refuted(acts.probe, *m.span())
                # A multi-word act ("waiting for approval") is negated in its head, and
                # stopped right before it ("stop waiting for approval").
                stopped = head != before and self._stopped(before)
                doubted = sentence.endswith("?") and _RHETORICAL.search(before) is not None
                flips = self._negations(head) + refuted + stopped + doubted
                if flips % 2 == 0 or acts.narrative:
                    acts.careful = True
                    continue
                if (
                    self._deferred(before)
                    or self._described_refusal(before)
                    or self._possessed(before, m.group(0))
                    or self._described_habit(m.groupdict().get("verb") or "", before)
                ):
                    continue
                acts.claim_rule = rule.id
                return

    def _conclude(self, acts: _Acts, injected: Rule | None) -> Evidence:
        """What the acts found say of the sentence, strongest first."""
        sentence = acts.sentence
        if acts.claim_rule:
            return Evidence(sentence, Polarity.CLAIM, True, acts.claim_rule)
        if acts.careful:
            return Evidence(sentence, Polarity.CAREFUL, True)
        if injected is not None:
            return Evidence(sentence, Polarity.INJECTED, True, injected.id)
        if acts.supposed:
            return Evidence(sentence, Polarity.WEAK, True, SUPPOSED_RULE)
        for rule, pattern in self._roleplay:
            hint = pattern.search(sentence)
            if hint and self._negations(sentence[: hint.start()]) % 2 == 0:
                return Evidence(sentence, Polarity.WEAK, True, rule.id)
        return Evidence(sentence, Polarity.NONE, True)


@dataclass(slots=True)
class _Acts:
    """What reading one sentence's acts has found so far (``StructureReader.read``)."""

    sentence: str
    # The sentence with inner dots (paths, file names) masked.
    probe: str
    # The sentence reports harm done (an incident), so a permissive act in it is described.
    narrative: bool
    # The sentence ends by calling what it says false ("... is an injection").
    meta_false: bool
    claim_rule: str = ""
    careful: bool = False
    supposed: bool = False
