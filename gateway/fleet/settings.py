"""The `[fleet]` section: where a box ships its lines (ClickHouse over HTTP) and how a fleet node reads
them. A pydantic section like those of gateway/settings.py, which holds it as `fleet: FleetSettings` (no
URLs: the box ships nothing). Knows nothing about the store or the appliance.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BOX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")       # a database or cluster name, used unquoted in DDL


class FleetSettings(BaseModel):
    """`[fleet]`. urls: the ClickHouse HTTP endpoints (every node for `linegate fleet init`; any one
    of them takes a box's inserts); cluster: the `remote_servers` name the Distributed tables span
    ("": one server, no Distributed table)."""

    model_config = ConfigDict(extra="forbid")

    urls: list[str] = Field(default_factory=list)
    user: str = "default"                      # the shipping (and DDL) user
    password: str = ""
    box_id: str = ""                           # this box's name in the plant: a box that ships needs one
    database: str = "linegate"
    cluster: str = ""
    batch_lines: int = Field(10_000, ge=1, le=200_000)   # lines per INSERT
    interval_s: float = Field(1.0, gt=0, le=3600)        # wait between passes once caught up
    timeout_s: float = Field(30.0, gt=0, le=3600)        # one HTTP request
    backoff_max_s: float = Field(60.0, ge=1, le=3600)    # waits double from 1 s up to this while unreachable
    # Retention cap: the store may delete lines not yet shipped only past this many of them (they are
    # counted in the shipper's `dropped_unshipped`); below it retention stops at the shipping cursor.
    max_unshipped_lines: int = Field(2_000_000, ge=0)
    # The fleet node's reads: a user whose profile is readonly=2, with these caps on every query.
    reader_user: str = "linegate_reader"
    reader_password: str = ""
    max_execution_time_s: float = Field(10.0, gt=0, le=600)
    max_result_rows: int = Field(100_000, ge=1)
    # `linegate serve` as the plant's fleet node: search, stats and the chat's queries read every box's lines
    # from the urls (as reader_user) instead of this process's own store. A node ships nothing (no box_id).
    node: bool = False

    @field_validator("urls")
    @classmethod
    def _urls(cls, v: list[str]) -> list[str]:
        for url in v:
            if not re.fullmatch(r"https?://[^\s/?#]+/?", url):
                raise ValueError(f"fleet.urls: {url!r} is not http(s)://host:port")
        return [u.rstrip("/") for u in v]

    @field_validator("database", "cluster")
    @classmethod
    def _name(cls, v: str, info) -> str:
        if v and not NAME.fullmatch(v):
            raise ValueError(f"fleet.{info.field_name} = {v!r}: letters, digits and _ only")
        if info.field_name == "database" and not v:
            raise ValueError("fleet.database is empty")
        return v

    @field_validator("box_id")
    @classmethod
    def _box(cls, v: str) -> str:
        if v and not BOX_ID.fullmatch(v):
            raise ValueError(f"fleet.box_id = {v!r}: letters, digits, . _ - (at most 64), starting with a letter "
                             "or digit")
        return v

    @model_validator(mode="after")
    def _node(self) -> "FleetSettings":
        if self.node and not self.urls:
            raise ValueError("fleet.node = true needs fleet.urls (the ClickHouse servers the node reads)")
        if self.node and self.box_id:
            raise ValueError(f"fleet.node = true with fleet.box_id = {self.box_id!r}: a fleet node reads every "
                             "box and ships nothing; leave box_id out")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.urls)

    @property
    def ships(self) -> bool:
        """A box ships when it has somewhere to ship to and a name to ship under (a fleet node has none)."""
        return bool(self.urls and self.box_id)
