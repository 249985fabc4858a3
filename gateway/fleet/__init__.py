"""Fleet: boxes ship their lines to ClickHouse; a fleet node reads them (docs/fleet.md)."""
