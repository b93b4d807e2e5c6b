-- Rows stay whole and uncompressed up to a page (issue 17 §5). A lesson row is ~2 KB (its
-- 384-float vector alone is 1.5 KB), just over the default 2 KB point at which Postgres starts
-- compressing a row's compressible values in place. A compressed copy of an indexed value
-- (a scope, tags, a situation) never equals the same value written again, so every later
-- UPDATE of such a row, a confirmation that rewrites the row with its scope unchanged, was a
-- new row version in every index, HNSW included (~3 ms at 100k lessons) instead of a
-- heap-only update. Rows written from now on are compressed only past ~8 KB; existing ones
-- are rewritten uncompressed on their next update.
ALTER TABLE lessons SET (toast_tuple_target = 8160);
