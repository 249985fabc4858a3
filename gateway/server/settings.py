"""ServerSettings: the `[server]` section of the appliance settings (listen address, keys, limits, CORS).

Knows nothing about the pipeline or the engine; the appliance Settings nests this model.
Unsafe combinations are refused here, with a message that names the setting.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
KEY_FILE_NAME = "api_keys.json"           # under the data dir; holds only sha256 hashes
MAX_BODY_BYTES = 256 * 1024               # chat, search, everything but ingest
MAX_INGEST_BODY_BYTES = 8 * 1024 * 1024   # one NDJSON batch
RATE_LIMIT_PER_S = 20.0                   # per key, token bucket refill
RATE_LIMIT_BURST = 60                     # per key, bucket size
MAX_CHAT_TOKENS = 512                     # ceiling on max_tokens a client may ask for
MAX_SEARCH_LIMIT = 500


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerSettings(BaseModel):
    host: str = DEFAULT_HOST
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    key_file: str = KEY_FILE_NAME             # relative paths resolve under the data dir
    require_key: bool = True                  # false only for a loopback-only development box
    max_body_bytes: int = Field(MAX_BODY_BYTES, ge=1024)
    max_ingest_body_bytes: int = Field(MAX_INGEST_BODY_BYTES, ge=1024)
    rate_limit_per_s: float = Field(RATE_LIMIT_PER_S, gt=0)
    rate_limit_burst: int = Field(RATE_LIMIT_BURST, ge=1)
    max_chat_tokens: int = Field(MAX_CHAT_TOKENS, ge=1)
    cors_origins: list[str] = Field(default_factory=list)   # closed by default
    web_dir: str | None = None                # None = the repository's web/ folder

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> "ServerSettings":
        if not self.require_key and not is_loopback(self.host):
            raise ValueError(
                f"server.host = {self.host!r} listens beyond localhost with server.require_key = false: "
                "refused. Keep require_key = true (create a key with `linegate keys create --data-dir DIR`) "
                "or listen on 127.0.0.1.")
        if "*" in self.cors_origins:
            raise ValueError("server.cors_origins = ['*'] is refused: name the origins that may call the API")
        return self

    def key_path(self, data_dir: str | Path) -> Path:
        path = Path(self.key_file)
        return path if path.is_absolute() else Path(data_dir) / path
