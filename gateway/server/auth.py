"""API keys (only their sha256 hashes are stored) and the per-key rate limit.

A key is 32 random bytes, shown once as `lg_<urlsafe base64>`. Knows nothing about HTTP
routes: the dependency in deps.py calls `KeyStore.verify` and `RateLimiter.take`.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

KEY_PREFIX = "lg_"
KEY_BYTES = 32
HASH_SCHEME = "sha256"   # keys carry 256 random bits: a slow KDF adds nothing against brute force
MAX_KEY_CHARS = 128      # longer presented keys are rejected before hashing
MAX_BUCKETS = 10_000     # rate-limit buckets kept (per key id, or per client address for failed keys)


def new_key() -> str:
    return KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode().rstrip("=")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class KeyRecord:
    id: str          # first 12 hex digits of the hash: names the key in logs and metrics
    hash: str        # sha256 hex of the full key
    name: str
    created: float


class KeyStore:
    """The key hash file: JSON {"scheme": "sha256", "keys": [{id, hash, name, created}]}.

    Reloaded when the file changes, so `linegate keys create` takes effect on a running server.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._records: tuple[KeyRecord, ...] = ()
        self._load()

    def _load(self) -> None:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._records, self._mtime = (), None
            return
        if mtime == self._mtime:
            return
        try:
            doc = json.loads(self.path.read_text("utf-8"))
            if doc.get("scheme") != HASH_SCHEME:
                raise ValueError(f"scheme {doc.get('scheme')!r}, expected {HASH_SCHEME!r}")
            records = tuple(KeyRecord(id=k["hash"][:12], hash=k["hash"], name=k.get("name", ""),
                                      created=float(k.get("created", 0))) for k in doc["keys"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"key file {self.path}: unreadable ({exc})") from exc
        for rec in records:
            if len(rec.hash) != 64 or any(c not in "0123456789abcdef" for c in rec.hash):
                raise ValueError(f"key file {self.path}: key {rec.id!r} is not a sha256 hex digest")
        self._records, self._mtime = records, mtime

    def records(self) -> tuple[KeyRecord, ...]:
        with self._lock:
            self._load()
            return self._records

    def __len__(self) -> int:
        return len(self.records())

    def create(self, name: str = "") -> str:
        """Make a key, store its hash (file mode 0600, atomic replace) and return the key itself."""
        key = new_key()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # flock: `linegate keys create` may run while another one (or the server's first start) writes.
        with self._lock, open(self.path.with_name(self.path.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._mtime = None
            self._load()
            rec = KeyRecord(id=hash_key(key)[:12], hash=hash_key(key), name=name, created=time.time())
            records = self._records + (rec,)
            doc = {"scheme": HASH_SCHEME,
                   "keys": [{"hash": r.hash, "name": r.name, "created": r.created} for r in records]}
            tmp = self.path.with_name(self.path.name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            self._mtime = None
            self._load()
        return key

    def verify(self, presented: str) -> KeyRecord | None:
        """The record whose hash matches, else None.

        Constant time in the key's content: the presented key is hashed once, and its hash is
        compared with every stored hash by hmac.compare_digest, without stopping at a match.
        """
        if not presented or len(presented) > MAX_KEY_CHARS:
            return None
        digest = hash_key(presented).encode()
        found = None
        for rec in self.records():
            if hmac.compare_digest(digest, rec.hash.encode()):
                found = rec
        return found


class RateLimiter:
    """Token bucket per key id: `burst` requests at once, refilled at `rate_per_s`."""

    def __init__(self, rate_per_s: float, burst: int, clock=time.monotonic):
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}   # id -> (tokens, last monotonic time)
        self._lock = threading.Lock()

    def waiting(self, key_id: str) -> float:
        """Seconds until `key_id` has a token again (0.0 when it has one); takes nothing."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate_per_s)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate_per_s

    def take(self, key_id: str) -> float:
        """0.0 if the request may go; otherwise the seconds until one token is back."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate_per_s)
            if len(self._buckets) >= MAX_BUCKETS and key_id not in self._buckets:
                self._buckets.pop(next(iter(self._buckets)))     # the oldest client: bounded memory
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / self.rate_per_s
