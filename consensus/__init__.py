"""Quorum validation: the high-stakes rule, voter selection, vote records, tally, certificates.

Pure rules over values; the node does the asking (``PeerService.RequestVote``), the storing
and the timing. Modules: ``params`` (``HighStakesParams``, ``QuorumParams``), ``high_stakes``,
``voters``, ``votes``, ``tally``, ``certificate``, ``accountability``.
"""
