-- Room on every page for a row's next version (issue 17 §1). A recall marks the lessons it
-- returns as used (last use, use count: no indexed column), and a confirmation moves only
-- numbers: with full pages each such UPDATE put the new row version on another page and so
-- into every index of the table, the HNSW graph included (~4 ms for one recall's five marks
-- over 2,000 lessons, against ~0.8 ms as heap-only updates). Pages written from now on keep
-- 30 % free; existing pages are left as they are (rewriting them would lock the table).
ALTER TABLE lessons SET (fillfactor = 70);
