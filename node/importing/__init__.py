"""The import pipeline's pure cores: filters, confidence transfer and the import decision.

``filters`` (anti-poisoning), ``transfer`` (how much to believe another node) and ``decision``
(the ordered stages that need no I/O) are functions of values; the node wires them to the
store, the registry and reputation.
"""

__all__: list[str] = []
