"""gateway.resources: the checkout's files in a checkout, the wheel's copies elsewhere."""

from pathlib import Path

from gateway import resources


def test_checkout_files_are_used_in_a_checkout():
    repo = Path(__file__).resolve().parents[1]
    assert resources.data_path("models/manifest.toml") == repo / "models" / "manifest.toml"
    assert resources.data_path("web") == repo / "web"


def test_installed_copy_is_used_outside_a_checkout(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    (site / "gateway" / "_data" / "models").mkdir(parents=True)
    (site / "models").mkdir()  # another distribution's top-level "models" folder is not our checkout
    (site / "models" / "manifest.toml").write_text("")
    monkeypatch.setattr(resources, "_PACKAGE", site / "gateway")
    monkeypatch.setattr(resources, "_CHECKOUT", site)
    assert resources.data_path("models/manifest.toml") == site / "gateway" / "_data" / "models" / "manifest.toml"
