"""The lesson store: a ``LessonStore`` port with in-memory and Postgres+pgvector adapters."""
