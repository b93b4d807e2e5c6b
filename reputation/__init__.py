"""Reputation, trust, expertise and global trust, fed by events; no network or database calls.

Modules: ``params`` (validated parameters), ``events`` (what happened), ``scores`` (the
labelled-part scorer and the bands), ``pairwise`` (this node's direct trust), ``global_trust``
(EigenTrust), ``principals`` (independence by principal), ``table`` (the operator's table),
``transfer`` (confidence transfer), ``port`` (what the node sees). See ``docs/trust.md``.
"""
