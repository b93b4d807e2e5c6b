-- Lessons by the node they were imported from (issue 17 §5). The taint sweep runs every few
-- seconds: it asks which sources live lessons came from, then reads only a tainted source's
-- lessons. Without this index both were a scan of every row; the sweep used to read every
-- live lesson whole (at 2,000 lessons 3 % of a node's CPU under a recall load, and growing
-- with the store). Local lessons (NULL) are left out of it.
CREATE INDEX IF NOT EXISTS lessons_imported_from_idx ON lessons (imported_from, status)
    WHERE imported_from IS NOT NULL;
