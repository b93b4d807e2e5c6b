-- Lookups by operation key (issue 10 §2.8): LessonFilter.about selects lessons that recommend
-- an operation, say to avoid it (an `avoid:<key>` tag) or are a situation on that tool. Each
-- arm gets an index, so a mechanical lesson is found again however old or unconfident it is,
-- without reading a scope's rows.
CREATE INDEX IF NOT EXISTS lessons_tags_gin ON lessons USING gin (tags);
CREATE INDEX IF NOT EXISTS lessons_situation_tool_idx ON lessons ((situation ->> 'tool'));
