-- What the crowd merge reads of each report (`kiln_fleet::crowd::Digest`, as JSON): the summary
-- merges from it and never parses the report itself again. Written with the report; rows stored
-- before this migration have '' until the server fills theirs in, in the background.
ALTER TABLE reports ADD COLUMN digest TEXT NOT NULL DEFAULT '';
