"""The autonomy check's meaning part: a classifier over sentence vectors (one embedder's space).

Only with an embedder named in ``AutonomyParams.semantic_embedders`` (MiniLM); see
:mod:`lamarck.policy.autonomy` for how the filter uses it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

import numpy as np

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.errors import ConfigError
from lamarck.policy.autonomy_params import AutonomyParams

__all__ = ["MODEL_FILE", "ClassifierWeights", "MeaningModel", "meaning_model"]


# --------------------------------------------------------------------------------------------
# Meaning.


#: The packaged classifier (``bench/train_autonomy.py`` writes it from the tuned split only).
MODEL_FILE = "autonomy_model.json"


@dataclass(frozen=True, slots=True)
class ClassifierWeights:
    """A logistic regression over [unit sentence vector, weak structural hint] in one space.

    ``embedder`` names the vector space the weights were trained in; ``weights`` has one
    entry per vector dimension plus one for the weak hint.
    """

    embedder: str
    weights: tuple[float, ...]
    bias: float

    def __post_init__(self) -> None:
        values = (*self.weights, self.bias)
        if len(self.weights) < 2 or not all(math.isfinite(v) for v in values):
            raise ConfigError("invalid classifier weights: need finite values", reason="bad_model")

    @classmethod
    def from_obj(cls, obj: Mapping[str, object]) -> ClassifierWeights:
        """Read the JSON object ``bench/train_autonomy.py`` writes (``ConfigError`` if bad)."""
        try:
            embedder = obj["embedder"]
            weights = obj["weights"]
            bias = obj["bias"]
            if not isinstance(embedder, str) or not isinstance(weights, list):
                raise TypeError("embedder must be a string and weights a list")
            return cls(embedder, tuple(float(w) for w in weights), float(bias))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"invalid autonomy model: {e}", reason="bad_model") from None

    @classmethod
    def packaged(cls) -> ClassifierWeights:
        """The weights shipped with the package (``policy/autonomy_model.json``)."""
        text = resources.files("lamarck.policy").joinpath(MODEL_FILE).read_text("utf-8")
        return cls.from_obj(json.loads(text))


class MeaningModel:
    """The meaning check: P(autonomy claim) of a text from its vector (one embedder's space).

    Enabled only when the embedder is named in ``params.semantic_embedders`` and the weights
    were trained in its space with its dimension; otherwise the filter reads structure only.
    """

    def __init__(
        self, embedder: Embedder, params: AutonomyParams, weights: ClassifierWeights | None = None
    ) -> None:
        self.embedder = embedder
        given = weights if weights is not None else ClassifierWeights.packaged()
        self.enabled = (
            embedder.name in params.semantic_embedders
            and given.embedder == embedder.name
            and len(given.weights) == embedder.dim + 1
        )
        self._w = np.asarray(given.weights[:-1], dtype=np.float64)
        self._w_weak = given.weights[-1]
        self._b = given.bias

    def probability(self, vector: Vectors, weak: bool) -> float:
        """The classifier's probability that the text of ``vector`` is an autonomy claim."""
        if not self.enabled:
            return 0.0
        z = float(self._w @ vector) + self._w_weak * float(weak) + self._b
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def meaning_model(
    embedder: Embedder | None,
    params: AutonomyParams,
    weights: ClassifierWeights | None = None,
) -> MeaningModel | None:
    """The node's meaning check for ``embedder`` (None: structure only); ``weights``: the
    packaged classifier unless given."""
    if embedder is None or embedder.name not in params.semantic_embedders:
        return None
    model = MeaningModel(embedder, params, weights)
    return model if model.enabled else None
