-- Reports as received: one row per distinct report (the SHA-256 of its canonical JSON), the
-- fields the summary groups by, and the report itself.
CREATE TABLE reports (
    id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    received_unix INTEGER NOT NULL,
    device_name TEXT NOT NULL,
    device_class TEXT NOT NULL,
    kiln_version TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX reports_class ON reports (device_class);
