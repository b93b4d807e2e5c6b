-- A private lesson names the nodes it may be sent to (the memory record's `recipients`).
-- Empty for public and trusted lessons; the publisher refuses a private lesson without any.
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS recipients text[] NOT NULL DEFAULT '{}';
