"""The import decision: the ordered stages a received record passes, the
anti-poisoning filters and the autonomy rules. Functions of values: the node's intake wires
them to the store, the registry and reputation."""
