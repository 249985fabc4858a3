"""The fleet's ClickHouse tables and `init_schema` (`linegate fleet init`): a box's lines (fields, template
text, named parameters) and alerts, keyed by box and id. SQL that ClickHouse 18.16 and current releases
both accept (no TTL, no LowCardinality, no ON CLUSTER: the DDL runs on every node). Knows nothing of SQLite.

Idempotence: the local tables are ReplacingMergeTree ordered by (box, id), and the Distributed tables
shard by a hash of (box, id), so a line inserted twice lands twice on the same shard and in the same
partition (its arrival month, fixed per line): `SELECT ... FINAL` (or a merge) keeps one. A copy the shipper
sends of a line it may have sent before carries `resent = 1` (gateway/fleet/shipper.py): the fleet node's
reads count the lines without such a copy as rows, and dedupe only near those (gateway/fleet/node/sql.py).

Columns added since a table was made are added by `init_schema` (`ALTER TABLE ... ADD COLUMN`: 18.16 has no
`IF NOT EXISTS` there), so `linegate fleet init` also upgrades a plant's tables.
"""

from __future__ import annotations

from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.settings import FleetSettings

LINES = "lines"                   # what is inserted into and read: Distributed, or the table itself on one server
ALERTS = "alerts"
LOCAL_SUFFIX = "_local"           # the shard's own table behind a Distributed one

# (name, type) of each lines column; names as in the box's SQLite (gateway/pipeline/store_schema.py).
LINE_COLUMNS = (
    ("box", "String"),                     # the box's id ([fleet] box_id)
    ("id", "UInt64"),                      # the line's id in its box's store
    ("ts", "Float64"),                     # arrival, Unix seconds UTC
    ("time", "Float64"),                   # the line's own time (its header) if parsed, else ts
    ("time_text", "Nullable(String)"),
    ("source", "String"),
    ("host", "String"),                    # the transport's host
    ("line_host", "Nullable(String)"),     # the host the line's header names
    ("component", "Nullable(String)"),
    ("pid", "Nullable(Int64)"),
    ("severity", "UInt8"),                 # syslog code 0 (emergency) .. 7 (debug)
    ("level", "Nullable(String)"),         # the header's level word, canonical
    ("text", "String"),
    ("text_lower", "String DEFAULT lower(text)"),    # ASCII folded: words searched case-free without a regex
    ("template_id", "Nullable(Int64)"),    # the box's Drain id: meaningful only with box
    ("template", "String"),                # its text ('' when unclassified): templates of boxes meet here
    ("param_text", "Array(String)"),       # the template's <*> values, by position
    ("param_num", "Array(Nullable(Float64))"),
    ("param_name", "Array(String)"),       # '' where the parameter has no name
    ("resent", "UInt8"),                   # 1: the shipper may have sent this line before (a possible copy)
)
COMPUTED = ("text_lower",)                 # filled by the server: never in an INSERT's column list
# What an INSERT of lines names: 18.16 fills a DEFAULT column by its expression only when the INSERT's column
# list leaves it out (a JSON object without it would get '').
INSERT_LINE_COLUMNS = tuple(name for name, _ in LINE_COLUMNS if name not in COMPUTED)
ALERT_COLUMNS = (
    ("box", "String"),
    ("id", "UInt64"),
    ("version", "UInt64"),                 # ms of the shipping: the latest state of an alert wins
    ("ts", "Float64"),
    ("kind", "String"),
    ("severity", "String"),
    ("host", "String"),
    ("source", "String"),
    ("template_id", "Nullable(Int64)"),
    ("template", "String"),
    ("lines", "Array(String)"),
    ("line_ids", "Array(UInt64)"),
    ("count", "UInt64"),
    ("rule", "Nullable(String)"),
    ("explanation", "Nullable(String)"),
    ("explanation_status", "String"),
)
_PARTITION = "toYYYYMM(toDateTime(toUInt32(ts)))"


def _columns(cols: tuple[tuple[str, str], ...]) -> str:
    return ",\n  ".join(f"{name} {kind}" for name, kind in cols)


def local_ddl(database: str, name: str, cols: tuple[tuple[str, str], ...], version: str = "") -> str:
    return (f"CREATE TABLE IF NOT EXISTS {database}.{name} (\n  {_columns(cols)}\n)"
            f" ENGINE = ReplacingMergeTree({version}) PARTITION BY {_PARTITION} ORDER BY (box, id)")


def distributed_ddl(database: str, name: str, cluster: str) -> str:
    return (f"CREATE TABLE IF NOT EXISTS {database}.{name} AS {database}.{name}{LOCAL_SUFFIX}"
            f" ENGINE = Distributed({cluster}, {database}, {name}{LOCAL_SUFFIX}, cityHash64(box, id))")


def insert_lines_sql(table: str) -> str:
    """The INSERT statement of a JSONEachRow body of lines into `table` (database.name)."""
    return f"INSERT INTO {table} ({', '.join(INSERT_LINE_COLUMNS)}) FORMAT JSONEachRow"


def added_columns(database: str, cluster: str, have: dict[str, set[str]]) -> list[str]:
    """ALTERs that add to existing tables the columns made since (`have`: table -> its column names; a table
    not in it is skipped, CREATE made it whole): a shard's table before its Distributed one."""
    out = []
    for name, cols in ((LINES, LINE_COLUMNS), (ALERTS, ALERT_COLUMNS)):
        tables = [name + LOCAL_SUFFIX, name] if cluster else [name]
        for table in tables:
            if table not in have:
                continue
            after = None
            for col, kind in cols:
                if col not in have[table]:
                    out.append(f"ALTER TABLE {database}.{table} ADD COLUMN {col} {kind}" + (f" AFTER {after}" if after else ""))
                after = col
    return out


def ddl(database: str, cluster: str = "") -> list[str]:
    """The statements, in order, that one node runs. With a cluster: local tables `<name>_local` and
    Distributed `<name>` over them; without: `<name>` is the ReplacingMergeTree itself."""
    out = [f"CREATE DATABASE IF NOT EXISTS {database}"]
    for name, cols, version in ((LINES, LINE_COLUMNS, ""), (ALERTS, ALERT_COLUMNS, "version")):
        if cluster:
            out.append(local_ddl(database, name + LOCAL_SUFFIX, cols, version))
            out.append(distributed_ddl(database, name, cluster))
        else:
            out.append(local_ddl(database, name, cols, version))
    return out


def init_schema(settings: FleetSettings, urls: list[str] | None = None) -> list[str]:
    """Creates the tables on every node of `urls` (default: settings.urls); returns what it did, one line
    per node. Running it again changes nothing. A cluster's name must be in each node's remote_servers."""
    done = []
    for url in urls or settings.urls:
        client = ClickHouseHttp([url], settings.user, settings.password, settings.timeout_s)
        try:
            if settings.cluster:
                known = client.query(f"SELECT count() FROM system.clusters WHERE cluster = '{settings.cluster}'")
                if int(known.strip() or 0) == 0:
                    raise ValueError(f"{url}: fleet.cluster = {settings.cluster!r} is not in this server's "
                                     "remote_servers (docs/fleet.md)")
            for stmt in ddl(settings.database, settings.cluster):
                client.query(stmt)
            have: dict[str, set[str]] = {}
            for line in client.query(f"SELECT table, name FROM system.columns WHERE database = "
                                     f"'{settings.database}' FORMAT TabSeparated").splitlines():
                table, _, col = line.partition("\t")
                have.setdefault(table, set()).add(col)
            for stmt in added_columns(settings.database, settings.cluster, have):
                client.query(stmt)
            version = client.query("SELECT version()").strip()
        finally:
            client.close()
        tables = f"{LINES}, {ALERTS}" + (f" (Distributed over {settings.cluster})" if settings.cluster else "")
        done.append(f"{url}: ClickHouse {version}: {settings.database}: {tables}")
    return done


def insert_table(settings: FleetSettings, name: str) -> str:
    return f"{settings.database}.{name}"
