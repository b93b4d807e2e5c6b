"""The in-memory adapter's parts, one module per narrow store port (``InMemoryLessonStore``
in ``lamarck.node.store.memory`` is all of them) over ``tables.py``, the dicts they share."""
