-- Who sent each report, as a salted hash of the address (never the address), the device's
-- fingerprint and the report's size: the crowd merge counts one device per sender and class,
-- and quotas are per sender. Rows stored before this migration share the sender '00' (unknown:
-- counted as one sender); their fingerprints are filled in when the server opens the database.
ALTER TABLE reports ADD COLUMN sender TEXT NOT NULL DEFAULT '00';
ALTER TABLE reports ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE reports ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE reports SET bytes = length(CAST(body AS BLOB));
CREATE INDEX reports_sender ON reports (sender, bytes);
-- The salt of the sender hashes: random (SQLite's generator, seeded by the OS), made once,
-- never shown.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('sender_salt', lower(hex(randomblob(32))));
