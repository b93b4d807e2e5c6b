"""Global trust: EigenTrust over normalised local trust, anchored in pre-trusted peers.

Inputs are values: ``local[i][j]`` is how much peer ``i`` trusts peer ``j`` (in [0, 1]; this
node's own row comes from its pairwise trust, other rows from peers' signed local-trust
summaries, see ``docs/trust.md``), plus the operator's pre-trusted peers. The answer is a
trust vector over every peer named anywhere, summing to 1.

The rule (Kamvar, Schlosser, Garcia-Molina, "The EigenTrust algorithm", 2003, §4.5):

* ``s_ij = max(0, local[i][j] - local_floor)``: only trust above the floor lends anything;
  a peer's trust in itself is dropped (it would let a peer keep what it receives);
* ``c_ij = s_ij / sum_j s_ij``; a row with nothing to give (dangling) gives to ``p``;
* ``p`` is uniform over the pre-trusted peers; with none configured, this node alone is the
  anchor. It is never uniform over everyone: uniform pre-trust lets a Sybil cluster in;
* ``t_0 = p``, ``t_{k+1} = (1 - a) C^T t_k + a p`` until ``|t_{k+1} - t_k|_1 <= tolerance``.

Deterministic given its inputs: peers are ordered by id and each step is a fixed sequence of
numpy reductions (``bincount``), so the same inputs give the same bits. Sparse by
construction: one step costs O(edges), never O(peers^2).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from lamarck.reputation.params import GlobalTrustParams

__all__ = ["EigenTrustResult", "GlobalTrust", "eigentrust", "global_trust"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class EigenTrustResult:
    """The trust vector over peer indices, how many steps it took, and whether it converged."""

    trust: FloatArray
    iterations: int
    converged: bool
    residual: float


@dataclass(frozen=True, slots=True)
class GlobalTrust:
    """Global trust per peer id (sums to 1), with the anchors used and the convergence record.

    ``judged`` holds the peers some row rated (with a finite value) and the anchors: for any
    other peer nobody has an opinion, and :meth:`known` says so (``None``, shown "unknown").
    """

    values: Mapping[str, float]
    anchors: tuple[str, ...]
    iterations: int
    converged: bool
    residual: float
    judged: frozenset[str] = frozenset()

    def of(self, node_id: str) -> float:
        """A peer's share of the trust vector; 0 for a peer nobody named."""
        return self.values.get(node_id, 0.0)

    def known(self, node_id: str) -> float | None:
        """A peer's global trust, or ``None`` when no row rated it and it is no anchor."""
        return self.values.get(node_id, 0.0) if node_id in self.judged else None


def eigentrust(
    src: IntArray,
    dst: IntArray,
    weight: FloatArray,
    n: int,
    anchors: IntArray,
    params: GlobalTrustParams,
) -> EigenTrustResult:
    """EigenTrust over ``n`` peers given edges ``src -> dst`` with local trust ``weight``.

    ``weight`` is already floored (>= 0); self edges and zero weights are ignored. ``anchors``
    are the pre-trusted peer indices (at least one). Raises ``ValueError`` on bad shapes.
    """
    if n < 1:
        raise ValueError("eigentrust needs at least one peer")
    if not (src.shape == dst.shape == weight.shape) or src.ndim != 1:
        raise ValueError("src, dst and weight must be 1-d arrays of one length")
    if anchors.size == 0:
        raise ValueError("eigentrust needs at least one anchor (never a uniform pre-trust)")
    if src.size and (min(int(src.min()), int(dst.min())) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError("edge index out of range")
    if anchors.min() < 0 or anchors.max() >= n:
        raise ValueError("anchor index out of range")
    if src.size and not bool(np.all(np.isfinite(weight))):
        raise ValueError("local trust must be finite")
    keep = (src != dst) & (weight > 0.0)
    src, dst, weight = src[keep], dst[keep], weight[keep]
    out = np.bincount(src, weights=weight, minlength=n)
    c = weight / out[src]  # row-normalised: every kept row sums to 1
    dangling = out == 0.0
    p = np.zeros(n)
    p[np.unique(anchors)] = 1.0
    p /= p.sum()
    a = params.anchor_weight
    t = p.copy()
    residual = math.inf
    for step in range(1, params.max_iterations + 1):
        # What dangling peers hold goes to the anchors, so the vector keeps summing to 1.
        spread = np.bincount(dst, weights=c * t[src], minlength=n) + float(t[dangling].sum()) * p
        nxt = (1.0 - a) * spread + a * p
        residual = float(np.abs(nxt - t).sum())
        t = nxt
        if residual <= params.tolerance:
            return EigenTrustResult(trust=t, iterations=step, converged=True, residual=residual)
    return EigenTrustResult(
        trust=t, iterations=params.max_iterations, converged=False, residual=residual
    )


def _floored(value: float, floor: float) -> float:
    # A non-finite or out-of-range claim (a broken or hostile summary) lends nothing.
    if not math.isfinite(value):
        return 0.0
    return max(0.0, min(1.0, value) - floor)


def global_trust(
    local: Mapping[str, Mapping[str, float]],
    pretrusted: Iterable[str],
    self_id: str,
    params: GlobalTrustParams,
) -> GlobalTrust:
    """Global trust over every peer named in ``local``, the anchors and ``self_id``.

    ``local[i]`` is row ``i``: this node's own pairwise trust for ``self_id``, a peer's
    verified summary for the others. ``pretrusted`` are the operator-configured peers; if it
    is empty, ``self_id`` is the sole anchor. Each row is floored and normalised here, so what
    a row gives away sums to 1 whatever its scale, and the power iteration weighs it by its
    signer's own global trust (``C^T t``): a signer nobody trusts moves nothing.
    """
    if not self_id:
        raise ValueError("global_trust needs this node's id")
    anchors = tuple(sorted(set(pretrusted))) or (self_id,)
    names = set(local) | {j for row in local.values() for j in row} | set(anchors) | {self_id}
    peers = sorted(names)
    index = {peer: k for k, peer in enumerate(peers)}
    src: list[int] = []
    dst: list[int] = []
    weight: list[float] = []
    judged: set[str] = set()
    for truster in sorted(local):
        row = local[truster]
        for trustee in sorted(row):
            claim = row[trustee]
            # Judged: rated by someone other than itself, with a value that means something.
            if trustee != truster and math.isfinite(claim):
                judged.add(trustee)
            value = _floored(claim, params.local_floor)
            if value > 0.0:
                src.append(index[truster])
                dst.append(index[trustee])
                weight.append(value)
    result = eigentrust(
        np.asarray(src, dtype=np.int64),
        np.asarray(dst, dtype=np.int64),
        np.asarray(weight, dtype=np.float64),
        len(peers),
        np.asarray([index[a] for a in anchors], dtype=np.int64),
        params,
    )
    values = {peer: float(result.trust[k]) for k, peer in enumerate(peers)}
    return GlobalTrust(
        values=MappingProxyType(values),
        anchors=anchors,
        iterations=result.iterations,
        converged=result.converged,
        residual=result.residual,
        judged=frozenset(judged | set(anchors)),
    )
