"""Quorum validation: the high-stakes rule, voter selection, vote records, tally, certificates."""
