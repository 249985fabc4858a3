"""gateway.llm.models: manifest checks, pull (real pip from a local wheel folder), corrupt parts, no-op pulls.

Pulls go to a tmp LINEGATE_MODEL_DIR with a tiny three-part model whose wheels the test builds;
the real models are only listed and re-checked in place (never deleted).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from gateway.llm import models
from gateway._native import GGUFFile
from gateway.cli import main

VERSION = "1.0.0"
N_PARTS = 3


def make_wheel(folder: Path, package: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (pip reads its METADATA when resolving from --find-links)."""
    dist = package.replace("-", "_")
    path = folder / f"{dist}-{VERSION}-py3-none-any.whl"
    info = f"{dist}-{VERSION}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {VERSION}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: linegate-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


class TinyModel:
    """A real GGUF file split into N_PARTS wheels, and a manifest describing them."""

    def __init__(self, root: Path):
        self.root = root
        gguf_path = root / "tiny-src.gguf"
        w = GGUFWriter(gguf_path, arch="llama")
        w.add_block_count(1)
        w.add_tensor("token_embd.weight", np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        self.data = gguf_path.read_bytes()
        cut = len(self.data) // N_PARTS
        self.parts = [self.data[i * cut:(i + 1) * cut if i < N_PARTS - 1 else None] for i in range(N_PARTS)]
        self.wheels = root / "wheels"
        self.wheels.mkdir()
        for i, chunk in enumerate(self.parts, 1):
            self.write_part(i, chunk)
        self.manifest = root / "manifest.toml"
        lines = [
            '[models."tiny"]', 'role = "tests"', 'architecture = "llama"', f'version = "{VERSION}"',
            f"size = {len(self.data)}", f'sha256 = "{hashlib.sha256(self.data).hexdigest()}"', "parts = [",
        ]
        for i, chunk in enumerate(self.parts, 1):
            lines.append(f'  {{ package = "{self.package(i)}", path = "{self.inner(i)}", size = {len(chunk)}, '
                         f'sha256 = "{hashlib.sha256(chunk).hexdigest()}" }},')
        self.manifest.write_text("\n".join(lines + ["]", ""]))

    @staticmethod
    def package(i: int) -> str:
        return f"lgtest-tiny-part{i}"

    @staticmethod
    def inner(i: int) -> str:
        return f"lgtest_tiny_part{i}/data/part{i:02d}.bin"

    def write_part(self, i: int, chunk: bytes, inner: str | None = None) -> None:
        make_wheel(self.wheels, self.package(i), {inner or self.inner(i): chunk})

    def copy_download(self, requirements: list[str], dest: Path) -> None:
        """Stands in for pip when the test is about assembly, not downloading."""
        for wheel in self.wheels.glob("*.whl"):
            (dest / wheel.name).write_bytes(wheel.read_bytes())


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> TinyModel:
    monkeypatch.setenv(models.ENV_MODEL_DIR, str(tmp_path / "models"))
    return TinyModel(tmp_path)


def leftovers(folder: Path) -> list[str]:
    """Anything a pull leaves besides the model, its stamp and its lock."""
    keep = {"tiny.gguf", "tiny.gguf.verified", ".tiny.lock"}
    return sorted(p.name for p in folder.iterdir() if p.name not in keep) if folder.exists() else []


def no_download(requirements, dest):
    raise AssertionError(f"unexpected download of {requirements}")


# ---- pulling -------------------------------------------------------------------------------


def test_cli_pull_with_real_pip_from_a_wheel_folder(tiny, capsys):
    rc = main(["models", "pull", "--manifest", str(tiny.manifest), "--find-links", str(tiny.wheels)])
    assert rc == 0, capsys.readouterr().err
    final = models.model_dir() / "tiny.gguf"
    assert final.read_bytes() == tiny.data
    assert GGUFFile(str(final)).tensors[0].name == "token_embd.weight"
    assert leftovers(models.model_dir()) == []
    capsys.readouterr()
    assert main(["models", "list", "--json", "--manifest", str(tiny.manifest)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry == {
        "name": "tiny", "role": "tests", "architecture": "llama", "path": str(final), "present": True,
        "size": len(tiny.data), "sha256": hashlib.sha256(tiny.data).hexdigest(), "verified": True,
    }


def test_pip_failure_names_the_requirement(tiny):
    (tiny.wheels / "lgtest_tiny_part2-1.0.0-py3-none-any.whl").unlink()

    def download(reqs, dest):
        models.pip_download(reqs, dest, find_links=tiny.wheels, quiet=True)

    with pytest.raises(models.ModelError, match=r"pip download failed for .*lgtest-tiny-part2==1.0.0"):
        models.pull(manifest=tiny.manifest, download=download)
    assert not (models.model_dir() / "tiny.gguf").exists()
    assert leftovers(models.model_dir()) == []


@pytest.mark.parametrize(
    "damage,message",
    [
        ("flip", r"part 2/3 lgtest-tiny-part2==1.0.0 \(lgtest_tiny_part2/data/part02.bin\): sha256 [0-9a-f]{64} does not match"),
        ("short", r"part 2/3 lgtest-tiny-part2==1.0.0 .*: \d+ bytes, manifest says \d+"),
        ("long", r"part 2/3 lgtest-tiny-part2==1.0.0 .*: larger than the manifest's \d+ bytes"),
        ("missing_file", r"part 2/3 lgtest-tiny-part2==1.0.0 .*: lgtest_tiny_part2-1.0.0-py3-none-any.whl has no file lgtest_tiny_part2/data/part02.bin"),
        ("not_a_zip", r"part 2/3 lgtest-tiny-part2==1.0.0 .*: cannot read lgtest_tiny_part2-1.0.0-py3-none-any.whl"),
        ("no_wheel", r"part 2/3 lgtest-tiny-part2==1.0.0 .*: wheel not downloaded"),
    ],
)
def test_bad_part_is_named_and_leaves_no_model(tiny, damage, message):
    good = tiny.parts[1]
    wheel = tiny.wheels / "lgtest_tiny_part2-1.0.0-py3-none-any.whl"
    if damage == "flip":
        tiny.write_part(2, good[:10] + bytes([good[10] ^ 1]) + good[11:])
    elif damage == "short":
        tiny.write_part(2, good[:-1])
    elif damage == "long":
        tiny.write_part(2, good + b"\0")
    elif damage == "missing_file":
        tiny.write_part(2, good, inner="lgtest_tiny_part2/data/other.bin")
    elif damage == "not_a_zip":
        wheel.write_bytes(b"PK\x03\x04 this is not a zip")
    elif damage == "no_wheel":
        wheel.unlink()
    with pytest.raises(models.ModelError, match=message):
        models.pull(manifest=tiny.manifest, download=tiny.copy_download)
    assert not (models.model_dir() / "tiny.gguf").exists()
    assert leftovers(models.model_dir()) == []


def test_noop_pull_neither_downloads_nor_rehashes(tiny, monkeypatch):
    assert models.pull(manifest=tiny.manifest, download=tiny.copy_download) == {"tiny": "pulled"}

    def no_hash(*args, **kwargs):
        raise AssertionError("re-hashed a stamped file")

    with monkeypatch.context() as m:
        m.setattr(models, "sha256_file", no_hash)
        assert models.pull(manifest=tiny.manifest, download=no_download) == {"tiny": "present"}
    # A file whose mtime moved is re-checked once (no download), then trusted again.
    final = models.model_dir() / "tiny.gguf"
    st = final.stat()
    os.utime(final, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert models.pull(manifest=tiny.manifest, download=no_download) == {"tiny": "verified"}
    assert models.pull(manifest=tiny.manifest, download=no_download) == {"tiny": "present"}


def test_corrupted_model_is_pulled_again(tiny):
    models.pull(manifest=tiny.manifest, download=tiny.copy_download)
    final = models.model_dir() / "tiny.gguf"
    damaged = bytearray(tiny.data)
    damaged[100] ^= 0xFF
    final.write_bytes(bytes(damaged))  # same size, new mtime: the stamp no longer vouches for it
    assert models.list_models(tiny.manifest)[0]["verified"] is False
    assert models.pull(manifest=tiny.manifest, download=tiny.copy_download) == {"tiny": "pulled"}
    assert final.read_bytes() == tiny.data


def test_interrupted_pull_leaves_nothing_that_looks_complete(tiny):
    folder = models.model_dir()
    calls = []

    def interrupted(reqs, dest):
        tiny.copy_download(reqs, dest)
        calls.append(1)
        raise KeyboardInterrupt  # Ctrl-C after the download, before assembly finished

    with pytest.raises(KeyboardInterrupt):
        models.pull(manifest=tiny.manifest, download=interrupted)
    assert calls and not (folder / "tiny.gguf").exists() and leftovers(folder) == []
    # What a SIGKILLed pull leaves behind: a partial file and a wheel folder, under other names.
    (folder / ".tiny.gguf.partial-4242").write_bytes(tiny.data[:100])
    (folder / ".tiny.wheels-abc").mkdir()
    entry = models.list_models(tiny.manifest)[0]
    assert entry["present"] is False and entry["verified"] is False
    with pytest.raises(models.ModelError, match="not pulled"):
        models.resolve_model("tiny", tiny.manifest)
    assert models.pull(manifest=tiny.manifest, download=tiny.copy_download) == {"tiny": "pulled"}
    assert leftovers(folder) == []


def test_cli_pull_error_exit(tiny, capsys):
    rc = main(["models", "pull", "nope", "--manifest", str(tiny.manifest)])
    assert rc == 1
    assert "unknown model(s) nope; known: tiny" in capsys.readouterr().err


# ---- manifest and paths --------------------------------------------------------------------


def test_resolve_model(tiny, tmp_path):
    with pytest.raises(models.ModelError, match=r"model 'tiny' is not pulled .* run `linegate models pull tiny`"):
        models.resolve_model("tiny", tiny.manifest)
    models.pull(manifest=tiny.manifest, download=tiny.copy_download)
    final = models.model_dir() / "tiny.gguf"
    assert models.resolve_model("tiny", tiny.manifest) == final
    assert models.resolve_model("tests", tiny.manifest) == final  # by role
    assert models.resolve_model(str(tiny.root / "tiny-src.gguf"), tiny.manifest) == tiny.root / "tiny-src.gguf"
    assert models.model_path("tiny", tiny.manifest) == final
    with pytest.raises(models.ModelError, match=r"'nope.gguf' is neither a file nor a model name"):
        models.resolve_model("nope.gguf", tiny.manifest)
    with pytest.raises(models.ModelError, match=r"unknown model 'x'; known: tiny"):
        models.model_path("x", tiny.manifest)


@pytest.mark.parametrize(
    "edit,message",
    [
        (("size = ", "size = 1"), r"part sizes add up to \d+, not size = 1\d+"),
        (('role = "tests"', 'role = "oracle"'), r"role 'oracle' is not one of"),
        (('sha256 = "', 'sha256 = "X'), r"is not a lowercase hex sha256"),
        (('version = "1.0.0"', ""), r"missing or bad field 'version'"),
        (("parts = [", "parts = [ nonsense"), r"cannot read model manifest"),
    ],
)
def test_manifest_errors_name_file_and_model(tiny, edit, message):
    text = tiny.manifest.read_text().replace(*edit, 1)
    tiny.manifest.write_text(text)
    with pytest.raises(models.ModelError, match=message) as info:
        models.load_manifest(tiny.manifest)
    assert str(tiny.manifest) in str(info.value)


def test_real_manifest_is_consistent():
    specs = models.load_manifest()
    assert {s.role: s.name for s in specs.values()} == {
        "target": "qwen2.5-coder-1.5b-instruct", "draft": "qwen2.5-coder-0.5b-instruct", "tests": "smollm2-135m-instruct"}
    for spec in specs.values():
        for i, part in enumerate(spec.parts, 1):
            if len(spec.parts) > 1:  # part packages: <stem>-part<i>, file <stem_>_part<i>/data/part<ii>.bin
                assert part.package.endswith(f"-part{i}")
                assert part.path == f"{part.package.replace('-', '_')}/data/part{i:02d}.bin"


@pytest.mark.models
def test_real_models_pulled_and_verified(smollm_path, qwen05_path, qwen15_path):
    # A no-op on pulled models: it never downloads (and hashes only a file without a valid stamp).
    assert set(models.pull(download=no_download).values()) <= {"present", "verified"}
    entries = {e["name"]: e for e in models.list_models()}
    for path in (smollm_path, qwen05_path, qwen15_path):
        entry = entries[path.name.removesuffix(".gguf")]
        assert entry["verified"] and entry["present"] and entry["path"] == str(path)
        assert entry["size"] == path.stat().st_size
    assert models.resolve_model("target") == qwen15_path
    assert models.resolve_model("draft") == qwen05_path
