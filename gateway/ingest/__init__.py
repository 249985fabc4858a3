"""Log sources: bytes from syslog, files, MQTT, HTTP bodies and the demo line become LogRecords.

Sources know nothing about the store, triage or the model: they hand batches of records
to a `sink(records) -> ids` callable (the appliance's ingest) and count what was malformed.
"""

from gateway.ingest.record import (  # noqa: F401  (the package's public names)
    MAX_LINE_BYTES,
    LogRecord,
    SourceCounters,
    Severity,
    clip_text,
    decode_line,
    parse_severity,
    severity_from_text,
    severity_name,
)
