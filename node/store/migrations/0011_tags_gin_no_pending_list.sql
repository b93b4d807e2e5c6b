-- The tags index without its pending list (issue 17 §5). With GIN's default fastupdate, new
-- entries queue in an unsorted pending list that every search reads in full until a vacuum
-- merges it: after a catch-up or a bulk load the mechanical lookup by target tag, one key,
-- read ~260 pages (2 ms at 30k lessons, growing with the rows written since the last vacuum),
-- twice per RecordOutcome. Written straight into the index, a lookup reads a few pages; the
-- cost moves to the insert, which a lesson pays once.
ALTER INDEX lessons_tags_gin SET (fastupdate = off);
-- Merge whatever the pending list already holds, so existing stores gain at once.
SELECT gin_clean_pending_list('lessons_tags_gin'::regclass);
