"""ServerSettings: the `[server]` section of the appliance settings (listen address, keys, limits, CORS).

Defined in gateway/settings.py beside the other sections (the appliance's Settings nests it, and the
settings sit below the server); re-exported here for the server's modules.
"""

from gateway.settings import (DEFAULT_HOST, DEFAULT_PORT, KEY_FILE_NAME, MAX_BODY_BYTES, MAX_CHAT_TOKENS,
                              MAX_INGEST_BODY_BYTES, MAX_SEARCH_LIMIT, RATE_LIMIT_BURST, RATE_LIMIT_PER_S,
                              ServerSettings, is_loopback)

__all__ = ["ServerSettings", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT", "KEY_FILE_NAME", "MAX_BODY_BYTES",
           "MAX_CHAT_TOKENS", "MAX_INGEST_BODY_BYTES", "MAX_SEARCH_LIMIT", "RATE_LIMIT_BURST", "RATE_LIMIT_PER_S"]
