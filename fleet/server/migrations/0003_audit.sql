-- One record per stored report: when, how many bytes were received, from which sender (the
-- salted hash of the address: the address itself is never stored). Kept apart from the reports
-- so that the trail outlives a report removed by hand.
CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    received_unix INTEGER NOT NULL,
    report_id INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    sender TEXT NOT NULL
);
CREATE INDEX audit_sender ON audit (sender);
