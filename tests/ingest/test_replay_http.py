"""`linegate replay FILE --rate N --url URL`: a Loghub file posted over HTTP to a running appliance
lands in its store line for line; a wrong key is refused and reported (exit 1)."""

from __future__ import annotations

import json

from gateway.cli import main
from tests.server.conftest import appliance, auth, key, live_server, settings  # noqa: F401  (fixtures)


def test_replay_posts_every_line_to_the_store(live_server, appliance, loghub_dir, capsys):  # noqa: F811
    url, key = live_server
    path = loghub_dir / "OpenSSH" / "OpenSSH_2k.log"
    n = 300
    rc = main(["replay", str(path), "--rate", "5000", "--url", url, "--key", key, "--max-lines", str(n),
               "--host", "replayed"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and out["sent"] == out["acknowledged"] == n
    hits = appliance.store.search(peer="replayed", limit=1000)   # --host names the sender
    first = path.read_text(encoding="utf-8").splitlines()[:n]
    assert len(hits) == n
    assert sorted(h["text"] for h in hits) == sorted(first)


def test_replay_with_a_wrong_key_fails_clearly(live_server, loghub_dir, capsys):  # noqa: F811
    url, _ = live_server
    rc = main(["replay", str(loghub_dir / "HDFS" / "HDFS_2k.log"), "--rate", "1000", "--url", url,
               "--key", "lg_wrong", "--max-lines", "5"])
    captured = capsys.readouterr()
    assert rc == 1
    assert "401" in captured.err + captured.out
