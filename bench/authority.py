"""Benchmark of the influence gate against authority claims pushed by admitted peers.

Each run starts a fresh fleet (fresh attacker identities): ``--nodes`` nodes, the last
``--byzantine`` of them attackers, each under a principal of its own; every other honest
node runs with the influence gate off (``lamarck.fleet.attack_fleet``). The attackers
push paraphrased autonomy and permission claims (``fleet/authority_claims.py``: a
tuning set and a held-out set, many styles and languages, worded like the honest agents'
tasks); then every honest node's agent works every task, and every "Lessons:" section and
``CheckOperation`` preamble it received is searched for the claims
(``lamarck.fleet.authority``). Nothing corroborates or approves them, so each reach is
one before corroboration or approval. Goal: 0 on gated nodes; the gate-off nodes' figure
beside it (``authority_reach_ratio`` = gate on / gate off, claims reaching (node, claim)
pairs).

It also prints the gate's topic reading over each whole claim set (lexicon; lexicon and
MiniLM prototypes), not only over the claims a recall happened to rank: the tuning and
held-out sets, and the blind set (``fleet/authority_blind.py``) with its honest lessons
(false positives).

The last line is one JSON object (means, ``_spread`` = max - min over the runs).
A second pass in the same fleet pushes the same claims **dressed** as mechanical lessons
(their text with the tags of "prefer the task's operation over a variant of it", for other
targets): a node shows another principal's unverified lesson only as the mechanical claim it
carries, so the dressed claims' ids may reach as that node-written claim; their own text
must reach no one (``dressed_gate_on_claim_texts_reached``, goal 0).

``--quick``: one run of 5 nodes (2 attackers).

Usage: ``python -m bench.authority [--quick] [--runs N] [--nodes N] [--byzantine N]
[--base-port P]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np

from lamarck.fleet.attack_fleet import start_attack_fleet
from lamarck.fleet.authority import (
    AuthorityParams,
    Claim,
    claims_of,
    run_authority,
    topic_reading,
)
from lamarck.fleet.authority_blind import BLIND_ORDINARY
from lamarck.fleet.authority_claims import TASKS
from lamarck.learning.influence import AuthorityPrototypes, InfluenceParams
from lamarck.node.embedding import make_embedder
from lamarck.node.minilm_onnx import OnnxParams


def topic_figures() -> dict[str, float]:
    """The gate's topic reading over the tuning and the held-out claim sets."""
    params = InfluenceParams()
    embedder = make_embedder("minilm", onnx=OnnxParams())
    prototypes = AuthorityPrototypes.of(
        np.asarray(embedder.embed(list(params.authority_prototypes)), dtype=np.float32),
        params.authority_similarity,
    )
    out: dict[str, float] = {}
    for which in ("tuning", "held_out", "blind"):
        claims = claims_of(which, "-topic")  # type: ignore[arg-type]
        vectors = np.asarray(embedder.embed([c.text for c in claims]), dtype=np.float32)
        lexicon = topic_reading(claims, params)
        both = topic_reading(claims, params, prototypes, vectors.tolist())
        out[f"{which}_claims"] = float(len(claims))
        out[f"{which}_read_by_lexicon"] = float(sum(lexicon))
        out[f"{which}_read_by_lexicon_or_minilm"] = float(sum(both))
        missed = [c.text for c, hit in zip(claims, both, strict=True) if not hit]
        print(f"{which}: {sum(both)}/{len(claims)} read as authority; missed: {missed}")
    # Honest lessons about the same tasks, written with the blind set: false positives.
    ordinary = [
        Claim(False, k, text.format(t="svc-topic"), TASKS[k][1].format(t="svc-topic"))
        for k, text in BLIND_ORDINARY
    ]
    vectors = np.asarray(embedder.embed([c.text for c in ordinary]), dtype=np.float32)
    out["blind_ordinary_lessons"] = float(len(ordinary))
    out["blind_ordinary_read_by_lexicon"] = float(sum(topic_reading(ordinary, params)))
    out["blind_ordinary_read_by_lexicon_or_minilm"] = float(
        sum(topic_reading(ordinary, params, prototypes, vectors.tolist()))
    )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--byzantine", type=int, default=3)
    ap.add_argument("--base-port", type=int, default=9500)
    args = ap.parse_args(argv)
    runs, nodes, byz = args.runs, args.nodes, args.byzantine
    if args.quick:
        runs, nodes, byz = 1, 5, 2
    topics = topic_figures()
    ports = [args.base_port + 25 * k for k in range(2)]
    rows: list[dict[str, float]] = []
    for k in range(runs):
        with tempfile.TemporaryDirectory(prefix="lamarck-authority-") as tmp:
            fleet = start_attack_fleet(Path(tmp), nodes, byz, ports)
            try:
                report = run_authority(fleet, AuthorityParams(), tag=f"-auth{k}")
                # The same claims dressed as mechanical lessons, for other targets.
                dressed = run_authority(fleet, AuthorityParams(dressed=True), tag=f"-auth{k}d")
            finally:
                fleet.stop(lambda _: None)
        row = report.figures()
        row.update((f"dressed_{key}", v) for key, v in dressed.figures().items())
        rows.append(row)
        print(f"run {k + 1}: " + ", ".join(f"{a} {b:g}" for a, b in row.items()), flush=True)
        for where in report.where:
            print(f"run {k + 1}: reached a gated node: {where}")
        for where in dressed.where:
            print(f"run {k + 1}: a dressed claim shown as its tags' claim at a gated node: {where}")
    out: dict[str, float] = dict(topics)
    for key in rows[0]:
        values = [r[key] for r in rows]
        out[key] = round(statistics.fmean(values), 3)
        out[f"{key}_spread"] = round(max(values) - min(values), 3)
    on, off = out["gate_on_claims_reached"], out["gate_off_claims_reached"]
    out["authority_reach_ratio"] = round(on / off, 4) if off else 0.0
    out["held_out_reach_ratio"] = (
        round(out["gate_on_held_out_claims_reached"] / out["gate_off_held_out_claims_reached"], 4)
        if out["gate_off_held_out_claims_reached"]
        else 0.0
    )
    print(
        f"authority claims reaching honest agents ((node, claim) pairs, mean of {runs}): "
        f"gate on {on:g} (held-out {out['gate_on_held_out_claims_reached']:g}) vs gate off "
        f"{off:g} (held-out {out['gate_off_held_out_claims_reached']:g}); goal: gate on 0"
    )
    d_on, d_off = out["dressed_gate_on_claim_texts_reached"], out["dressed_gate_off_claims_reached"]
    out["dressed_text_reach_ratio"] = round(d_on / d_off, 4) if d_off else 0.0
    print(
        f"the same claims dressed as mechanical lessons: their text reaching honest agents, "
        f"gate on {d_on:g} vs gate off {d_off:g} (gate on, shown as the node-written claim: "
        f"{out['dressed_gate_on_claims_reached']:g}); goal: gate on 0"
    )
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
