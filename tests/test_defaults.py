"""Defaults live in one place, the settings (gateway/settings.py): the engine, the engine thread and the
native side receive values and never declare their own (a value declared twice will disagree one day).
Old names of settings keep working for one release, with a warning naming the new one."""

from __future__ import annotations

import inspect
import logging
import re
from pathlib import Path

import pytest

from gateway import _native
from gateway.llm import generate
from gateway.llm.engine import Engine
from gateway.pipeline.token_queue import ContextFeed, TokenQueue
from gateway.serve.engine_thread import EngineThread
from gateway.settings import BARE_ENGINE, EngineSettings, Settings, TokenQueueSettings, load

REPO = Path(__file__).resolve().parents[1]
# settings field -> the names it had before (each layer takes it under the settings' name, or the old one)
OLD_NAMES = {"kv_policy": ("policy",), "kv_block": ("sem_block",)}


def declared_defaults(fn, fields) -> dict[str, object]:
    """{settings field: the default `fn` declares for it (under its name or an old one)}; None counts as
    no default (not applicable)."""
    params = inspect.signature(fn).parameters
    out = {}
    for f in fields:
        for name in (f, *OLD_NAMES.get(f, ())):
            p = params.get(name)
            if p is not None and p.default is not inspect.Parameter.empty and p.default is not None:
                out[f] = p.default
    return out


def test_the_engine_declares_no_default():
    found = declared_defaults(Engine.__init__, EngineSettings.model_fields)
    assert not found, f"gateway/llm/engine.py re-declares settings' defaults: {found}"


def test_an_engine_needs_its_policy_and_precision():
    # None is "not given", not a value: the caller names both (settings, or BARE_ENGINE outside the appliance)
    params = inspect.signature(Engine.__init__).parameters
    assert params["act_precision"].default is inspect.Parameter.empty
    with pytest.raises(TypeError, match="kv_policy"):
        Engine("unused.gguf", n_sink=4, n_ring=64, n_scratch=64, act_precision="q8x2")


def test_linegate_generate_runs_the_bare_engine():
    # gateway/llm may not import the settings: `linegate generate` names its values, the same as BARE_ENGINE's
    assert (generate.GENERATE_KV_POLICY, generate.GENERATE_ACT_PRECISION) == (BARE_ENGINE.kv_policy,
                                                                              BARE_ENGINE.act_precision)


def test_the_engine_thread_declares_no_default():
    found = declared_defaults(EngineThread.__init__, EngineSettings.model_fields)
    assert not found, f"gateway/serve/engine_thread.py re-declares settings' defaults: {found}"


def test_the_token_queue_declares_no_default():
    for fn in (TokenQueue.__init__, ContextFeed.__init__):
        assert not declared_defaults(fn, TokenQueueSettings.model_fields), fn
    assert not declared_defaults(ContextFeed.__init__, {"window_s"})


@pytest.mark.parametrize("cls", [c for c in (getattr(_native, "Engine", None), getattr(_native, "CudaEngine", None))
                                 if c is not None])
def test_the_native_bindings_declare_no_layout_policy_or_precision(cls):
    sig = cls.__init__.__doc__.splitlines()[0]
    for name in ("n_sink", "n_ring", "n_scratch", "kv_policy", "act_precision"):
        m = re.search(rf"\b{name}: [^,)=]+(= [^,)]+)?[,)]", sig)
        assert m and m.group(1) is None, f"{cls.__name__}({name}) declares a default: {sig}"
    m = re.search(r"\bkv_block: [^,)=]+= (\d+)", sig)
    assert m is None or m.group(1) == "0", f"{cls.__name__}(kv_block) declares a block size: {sig}"
    for old in ("policy", "sem_block"):    # one name from the settings to the native side
        assert not re.search(rf"[(,] ?{old}:", sig), f"{cls.__name__} still takes {old}=: {sig}"


def test_the_native_options_leave_the_layout_to_the_caller():
    text = (REPO / "native" / "engine.h").read_text(encoding="utf-8")
    struct = text[text.index("struct EngineOptions"):]
    struct = struct[:struct.index("};")]
    for name in ("n_sink", "n_ring", "n_scratch", "kv_block"):
        m = re.search(rf"\bint {name} = (\d+);", struct)
        assert m and m.group(1) == "0", f"native/engine.h EngineOptions::{name} declares a value: {m and m.group(0)}"


# --- old names --------------------------------------------------------------------------------

def test_ring_section_is_read_as_token_queue_with_a_warning(tmp_path, caplog):
    toml = tmp_path / "linegate.toml"
    toml.write_text("[ring]\nn_tokens = 4096\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gateway.settings"):
        s = load(toml)
    assert s.token_queue.n_tokens == 4096
    assert any("[token_queue]" in r.getMessage() for r in caplog.records)


def test_token_queue_wins_over_ring():
    assert Settings(ring={"n_tokens": 4096}, token_queue={"n_tokens": 8192}).token_queue.n_tokens == 8192
