"""The fleet node's reads: the query surface compiled to ClickHouse SQL (sql.py) and run there (surface.py)."""
