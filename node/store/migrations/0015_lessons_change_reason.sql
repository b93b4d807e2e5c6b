-- Why the latest edit or the end of a lesson was made, as its author gave it. An own lesson's
-- reason is signed into its published record, so an edit's reason and a retirement's reason
-- reach every node holding a copy. NULL for rows written before: their records stay byte for
-- byte what they were.
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS change_reason text;
