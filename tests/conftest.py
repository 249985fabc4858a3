"""Shared fixtures: where the real models are, a Loghub excerpt, artifact folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings

# Property tests: the test command (`make test`, CI) runs them derandomized, so a run is
# reproducible and a submission's verdict does not depend on the draw; `make fuzz` explores
# with fresh random examples (HYPOTHESIS_PROFILE=explore), to find what the fixed draw does not.
_hypothesis_settings.register_profile("ci", derandomize=True)
_hypothesis_settings.register_profile("explore", derandomize=False)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts"

MODEL_NAMES = ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")


def model_dir() -> Path:
    return Path(os.environ.get("LINEGATE_MODEL_DIR", Path.home() / ".cache" / "linegate" / "models"))


def model_file(name: str) -> Path:
    """Path of a pulled model; skips nothing: a missing model is a set-up failure (make test pulls them)."""
    path = model_dir() / f"{name}.gguf"
    if not path.exists():
        pytest.fail(f"model {name} not found at {path}: run `linegate models pull {name}`")
    return path


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    return model_file("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def qwen05_path() -> Path:
    return model_file("qwen2.5-coder-0.5b-instruct")


@pytest.fixture(scope="session")
def qwen15_path() -> Path:
    return model_file("qwen2.5-coder-1.5b-instruct")


@pytest.fixture(scope="session")
def loghub_dir() -> Path:
    from gateway.datasets import loghub_dir as find

    return find()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
