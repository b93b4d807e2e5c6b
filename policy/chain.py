"""The import filter chain, built once from data at the composition root.

:func:`build_filters` is the one place the chain is made: the node (``node/params.py``), the
simulator and the tests call it, so every import runs the same filters. The chain holds the
autonomy filter (:class:`lamarck.policy.autonomy.AutonomyFilter`, which also reads text aimed at
the agent: injected instructions, piped downloads, tool-call syntax) and the secret scan with
the node's own secret parameters (those local learning writes through).
"""

from __future__ import annotations

import functools

from lamarck.consensus.high_stakes import HighStakesRule
from lamarck.domain.embedder import Embedder
from lamarck.learning.params import SecretParams
from lamarck.learning.secrets import scan_for_secrets
from lamarck.policy.autonomy import AutonomyFilter
from lamarck.policy.autonomy_meaning import ClassifierWeights, meaning_model
from lamarck.policy.decision import ImportParams, ImportPolicy
from lamarck.policy.filters import (
    AllOf,
    ConflictsWithEstablished,
    DeclaredSituationFilter,
    HighContradictionRate,
    RedFlags,
    SecretFilter,
    StatisticalOutlier,
    UnverifiedHighConfidence,
)

__all__ = ["build_filters", "build_policy", "secret_filter"]


def secret_filter(secrets: SecretParams) -> SecretFilter:
    """The import's secret filter: the one scanner every local write goes through, with the
    node's own ``secrets`` params, so import is never laxer than local learning."""
    return SecretFilter(functools.partial(scan_for_secrets, p=secrets))


def build_filters(
    params: ImportParams,
    embedder: Embedder | None = None,
    weights: ClassifierWeights | None = None,
) -> AllOf:
    """The production chain from the import decision's parameters: hard rejects (cheapest
    first), then the red flags.

    ``embedder`` enables the autonomy filter's meaning check when its space is the one the
    classifier was trained in (else structure only); the filter never embeds at decision time
    when the pipeline gives it the vectors. The secret scan is the one the node's params
    hold (the node passes local learning's); ``weights``: the meaning classifier (the packaged
    one when None)."""
    p, a = params.filters, params.autonomy
    return AllOf(
        [
            DeclaredSituationFilter(p),
            AutonomyFilter(a, meaning_model(embedder, a, weights)),
            secret_filter(params.secrets),
            RedFlags(
                [
                    UnverifiedHighConfidence(p),
                    HighContradictionRate(p),
                    ConflictsWithEstablished(p),
                    StatisticalOutlier(p),
                ],
                p.red_flag_threshold,
            ),
        ]
    )


def build_policy(
    params: ImportParams,
    embedder: Embedder | None = None,
    weights: ClassifierWeights | None = None,
) -> ImportPolicy:
    """The checks of the import decision built from its parameters (once, at wiring): the
    filter chain (``build_filters``) and the high-stakes rule."""
    filters = build_filters(params, embedder, weights)
    return ImportPolicy(filters, HighStakesRule(params.high_stakes))
