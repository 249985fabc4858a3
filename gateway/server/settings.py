"""ServerSettings: the `[server]` section of the appliance settings (listen address, keys, limits, CORS).

Defined in gateway/settings.py beside the other sections (the appliance's Settings nests it, and the
settings sit below the server); re-exported here for the server's modules.
"""

from gateway.settings import ServerSettings, is_loopback

__all__ = ["ServerSettings", "is_loopback"]
