"""The Postgres adapter's parts, one module per narrow store port (``PostgresLessonStore``
in ``lamarck.node.store.postgres`` is all of them)."""
