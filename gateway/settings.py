"""The appliance's settings: a TOML file (`linegate serve --config FILE`) overlaid by environment
variables (prefix LINEGATE_, nested with __, e.g. LINEGATE_ENGINE__N_RING=4096).

Knows nothing about how the parts use them; unsafe values are refused here, naming the key.
"""

from __future__ import annotations

import ipaddress
import logging
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from gateway.fleet.settings import FleetSettings
from gateway.ingest.record import parse_severity_strict
from gateway.pipeline.store import DEFAULT_MAX_BYTES, MIN_STORE_BYTES

MAX_N_RING = 1 << 17          # positions must stay within the model's trained context anyway
MAX_N_SCRATCH = 1 << 14
MAX_QUEUE_TOKENS = 1 << 22    # the token queue's preallocated capacity ([token_queue] section)
MAX_BUDGET_MS = 600_000


# --- [server]: listen address, keys, limits, CORS (gateway/server reads it; it lives here so that
# the settings, below the server, need not import it) -----------------------------------------

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
KEY_FILE_NAME = "api_keys.json"           # under the data dir; holds only sha256 hashes
MAX_BODY_BYTES = 256 * 1024               # chat, search, everything but ingest
MAX_INGEST_BODY_BYTES = 8 * 1024 * 1024   # one NDJSON batch
RATE_LIMIT_PER_S = 20.0                   # per key, token bucket refill
RATE_LIMIT_BURST = 60                     # per key, bucket size
FAILED_KEY_PER_S = 1.0                    # wrong keys per client address: refill ...
FAILED_KEY_BURST = 10                     # ... and bucket size; past it 429 without checking the key
MAX_CHAT_TOKENS = 512                     # ceiling on max_tokens a client may ask for


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerSettings(BaseModel):
    """The `[server]` section. Unsafe combinations are refused here, naming the setting."""

    host: str = DEFAULT_HOST
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    key_file: str = KEY_FILE_NAME             # relative paths resolve under the data dir
    require_key: bool = True                  # false only for a loopback-only development box
    max_body_bytes: int = Field(MAX_BODY_BYTES, ge=1024)
    max_ingest_body_bytes: int = Field(MAX_INGEST_BODY_BYTES, ge=1024)
    rate_limit_per_s: float = Field(RATE_LIMIT_PER_S, gt=0)
    rate_limit_burst: int = Field(RATE_LIMIT_BURST, ge=1)
    failed_key_per_s: float = Field(FAILED_KEY_PER_S, gt=0)
    failed_key_burst: int = Field(FAILED_KEY_BURST, ge=1)
    max_chat_tokens: int = Field(MAX_CHAT_TOKENS, ge=1)
    cors_origins: list[str] = Field(default_factory=list)   # closed by default
    web_dir: str | None = None                # None = the repository's web/ folder
    tls: bool = False                         # HTTPS; without tls_cert a self-signed one is made on first start
    tls_cert: str | None = None               # PEM certificate (chain) and its key; relative to the data dir
    tls_key: str | None = None
    plain_http_beyond_localhost: bool = False # the explicit opt-in to API keys in clear on the network

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> "ServerSettings":
        if not self.require_key and not is_loopback(self.host):
            raise ValueError(
                f"server.host = {self.host!r} listens beyond localhost with server.require_key = false: "
                "refused. Keep require_key = true (create a key with `linegate keys create --data-dir DIR`) "
                "or listen on 127.0.0.1.")
        if not self.tls and not is_loopback(self.host) and not self.plain_http_beyond_localhost:
            raise ValueError(
                f"server.host = {self.host!r} listens beyond localhost over plain HTTP, where API keys travel "
                "in clear: refused. Set server.tls = true (with tls_cert/tls_key, or a self-signed certificate "
                "made on first start), or server.plain_http_beyond_localhost = true to accept that.")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("server.tls_cert and server.tls_key go together: give both, or neither (self-signed)")
        if self.tls_cert is not None and not self.tls:
            raise ValueError("server.tls_cert is set but server.tls = false: set tls = true to use it")
        if "*" in self.cors_origins:
            raise ValueError("server.cors_origins = ['*'] is refused: name the origins that may call the API")
        return self

    def key_path(self, data_dir: str | Path) -> Path:
        path = Path(self.key_file)
        return path if path.is_absolute() else Path(data_dir) / path


class SettingsError(ValueError):
    """Bad settings: the message names the key and, when there is one, the file."""


def read_old_name(data: Any, old: str, new: str, warning: str) -> Any:
    """Raw settings `data` with the key `old` read as `new` (which wins where both are given), and
    `warning` logged: how a renamed key keeps working for one release."""
    if not isinstance(data, dict) or old not in data:
        return data
    data = dict(data)
    data.setdefault(new, data.pop(old))
    logging.getLogger(__name__).warning(warning)
    return data


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DemoSettings(_Section):
    enabled: bool = True
    line: str = "line3"                        # host prefix: line3/plc, line3/filler, ...
    seed: int = 7
    cycle_s: float = Field(2.0, gt=0.01, le=3600)   # one machine cycle (one burst of lines)
    jam_every_s: float | None = Field(90.0, gt=0)    # None: never
    overtemp_every_s: float | None = Field(150.0, gt=0)
    estop_every_s: float | None = Field(240.0, gt=0)
    first_fault_s: float = Field(20.0, ge=0)


class SyslogSettings(_Section):
    bind: str = "127.0.0.1"
    udp_port: int | None = Field(None, ge=1, le=65535)   # None: off
    tcp_port: int | None = Field(None, ge=1, le=65535)
    relp_port: int | None = Field(None, ge=1, le=65535)   # RELP (rsyslog omrelp): acknowledged after the commit


class TailSettings(_Section):
    files: list[Path] = Field(default_factory=list)
    poll_s: float = Field(0.2, gt=0, le=60)


class MqttInSettings(_Section):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(1883, ge=1, le=65535)
    topics: list[str] = Field(default_factory=lambda: ["factory/+/logs"])
    username: str | None = None
    password: str | None = None
    client_id: str = Field("linegate-ingest", min_length=1, max_length=64)  # names the broker session


class IngestSettings(_Section):
    demo: DemoSettings = Field(default_factory=DemoSettings)
    syslog: SyslogSettings = Field(default_factory=SyslogSettings)
    tail: TailSettings = Field(default_factory=TailSettings)
    mqtt: MqttInSettings = Field(default_factory=MqttInSettings)
    # source -> a header pattern (regex; named groups among ts, level, host, component, pid, message) that
    # overrides the learned format of that source while it matches (gateway.ingest.source_format)
    header_patterns: dict[str, str] = Field(default_factory=dict)

    @field_validator("header_patterns")
    @classmethod
    def _patterns(cls, v: dict[str, str]) -> dict[str, str]:
        from gateway.ingest.source_format import HeaderPattern
        for source, text in v.items():
            try:
                HeaderPattern(text)
            except ValueError as exc:
                raise ValueError(f"[ingest.header_patterns] {source!r}: {exc}") from None
        return v


class StoreSettings(_Section):
    path: Path | None = None                   # None: <data_dir>/logs.db
    max_bytes: int = Field(DEFAULT_MAX_BYTES, ge=MIN_STORE_BYTES)


class TriageSettings(_Section):
    rules_file: Path | None = None             # TOML, see gateway/pipeline/triage.py
    new_template_alerts: bool = True
    min_alert_severity: str = "warning"        # lines at least this severe raise an alert
    dedup_s: float = Field(60.0, ge=0)         # one alert per template per this many seconds
    # Each source's baseline: no new-template alerts for its first baseline_lines lines and baseline_s
    # seconds, whichever ends later (gateway/pipeline/baseline.py says why); 0 and 0: none.
    baseline_lines: int = Field(2_000, ge=0)
    baseline_s: float = Field(600.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _warmup_lines(cls, data: Any) -> Any:
        # warmup_lines (one count for all sources) is read as baseline_lines for one release
        return read_old_name(data, "warmup_lines", "baseline_lines",
                             "[triage] warmup_lines is deprecated: use baseline_lines (and baseline_s), per source")

    @field_validator("min_alert_severity")
    @classmethod
    def _sev(cls, v: str) -> str:
        parse_severity_strict(v)
        return v


KvPolicy = Literal["sink_ring", "novelty", "semantic", "fifo"]   # native/kv_cache.h
ActPrecision = Literal["auto", "q8x2", "q8"]                       # native/quant.h, plus "auto"


class EngineSettings(_Section):
    enabled: bool = True                       # false: no model (store, triage, alerts still run)
    model: str = "qwen2.5-coder-1.5b-instruct" # manifest name or a GGUF path
    n_sink: int = Field(0, ge=0, le=4096)      # 0: exactly the system prompt's length
    n_ring: int = Field(2048, ge=64, le=MAX_N_RING)
    n_scratch: int = Field(1024, ge=64, le=MAX_N_SCRATCH)   # a store query's call and result need ~360
    n_threads: int | None = Field(None, ge=1, le=1024)
    # What leaves the KV ring when it is full (native/kv_cache.h): "novelty" the oldest kv_block-token
    # block holding no line the reading budget marked important (those keep up to 3/4 of the ring, the
    # least important going first past it); "sink_ring" the
    # oldest tokens; "semantic" the older block of the most similar adjacent pair; "fifo" the oldest
    # with no sink (a baseline only). The CUDA engine runs the block policies as sink_ring. Why novelty
    # is the default: docs/perf/2026-12-02-long-stream.md.
    kv_policy: KvPolicy = "novelty"
    # novelty / semantic: tokens per block (n_ring must be a multiple); smaller blocks waste less of
    # the ring on the neighbours of a kept line (docs/perf/2026-12-02-long-stream.md)
    kv_block: int = Field(16, ge=4, le=1024)
    # Activations as two int8 terms ("q8x2": what the correctness gate holds) or one ("q8": llama.cpp's
    # scheme, half the integer work of a batch). "auto": q8 on CPUs, where batches are compute-bound,
    # q8x2 on CUDA (figures: docs/perf/2026-12-05-act-precision-x86.md).
    act_precision: ActPrecision = "auto"
    # ngram: prompt lookup over the stream, near free and exact; "model" (0.5B draft) pays only off
    # the CPU (NPU, GPU); see docs/perf/2026-11-30-drafter-defaults.md. "model:rknn": the 0.5B on the
    # RK3588 NPU; "auto": the fastest of target-only, ngram and the model draft (on the NPU where it can
    # run), timed on the target at first start and cached (gateway/llm/drafters/choice.py).
    drafter: Literal["none", "ngram", "model", "model:native", "model:onnx", "model:rknn", "auto"] = "ngram"
    # What runs when model:rknn cannot start; "error" refuses to start the appliance instead.
    drafter_fallback: Literal["ngram", "none", "error"] = "ngram"
    prefill_chunk: int = Field(32, ge=1, le=4096)   # stream tokens per prefill call (preemption grain)
    # Read the stream while a job runs (gateway/serve/job_reading.py): a chunk between the job's steps when
    # its deadline has room, so reading never pauses for a whole job; the job keeps the stream it started
    # with (native/kv_cache.h). The CUDA engine cannot: there reading waits for each job's end.
    # docs/perf/2026-12-04-reading-during-jobs.md
    read_during_jobs: bool = True
    # ... until the ring has evicted this share of its tokens from a running job's view
    read_during_jobs_max_lost: float = Field(0.5, ge=0, le=1)
    # ... taking at most this share of a running job's time (0.5: a job at most twice as long)
    read_during_jobs_share: float = Field(0.5, ge=0, le=1)
    # ... and past this reading lag the stream is due: read in the slack kept as the answer's margin too,
    # but not past the job's own deadline (a job past it, late: only at job_reading.LATE_DUE_FACTOR times it)
    read_during_jobs_lag_s: float = Field(10.0, ge=0, le=600)
    # ... and borrowing at most this share of the job's slack (its budget past admission's estimate of
    # its work): the rest is the answer's margin, for an estimate a loaded host makes too short
    read_during_jobs_slack: float = Field(0.5, ge=0, le=1)
    # A chat question answered from the store (query below) attends to the sink and its own prompt, not
    # to the ring (native/kv_cache.h, A JOB WITHOUT THE STREAM): its figures and lines are the store's,
    # in its prompt. Attending to the ring made it slower and its answer depend on what the ring held
    # that second. Alert explanations always see the ring. docs/perf/2026-12-06-questions-without-ring.md
    questions_see_stream: bool = False
    queue_size: int = Field(8, ge=1, le=1024)
    # Chat answers through one store query (gateway/serve/answer/): the model writes the call under
    # a grammar, the figures come from the store. false: the quoted-lines prompt alone.
    query: bool = True
    # The repetition guard (gateway/llm/repetition.py) on chat answers and alert explanations: no n-gram
    # of this many tokens twice in one answer (beyond what the prompt repeats); 0: off. Chosen in docs/perf/2026-12-02-no-repeat-ngram.md.
    no_repeat_ngram: int = Field(12, ge=0, le=256)
    # The calibrated kernel plan (gateway/llm/kernel_plan.py, <data_dir>/cache/kernel_plan.json): a start
    # without one for this CPU and build first times the kernels (<= 20 s). "auto": not under pytest;
    # "on": always; "off": never (a plan written by `linegate doctor --calibrate` is still loaded).
    kernel_calibration: Literal["auto", "on", "off"] = "auto"

    @field_validator("no_repeat_ngram")
    @classmethod
    def _ngram(cls, v: int) -> int:
        if v == 1:
            raise ValueError("engine.no_repeat_ngram = 1 would ban every token already written: use 0 (off) or >= 2")
        return v


# What an Engine built outside the appliance runs, where its caller has no Settings to give: tests, tools
# and benches (`Engine(..., **BARE_ENGINE.model_dump())`). The plain ring (the oldest tokens leave) and the
# precision the correctness gate holds: fixed values for comparable figures, not the appliance's defaults
# (EngineSettings, above). gateway/llm may not import this module (tests/test_layout.py): its own two
# engines, `linegate generate` and the draft model, name their values where they build them.
class BareEngineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kv_policy: KvPolicy = "sink_ring"
    act_precision: ActPrecision = "q8x2"


BARE_ENGINE = BareEngineSettings()


class TokenQueueSettings(_Section):
    """The `[token_queue]` section: the queue of tokenized lines between triage and the engine thread
    (gateway/pipeline/token_queue.py). Not the KV ring (`[engine] n_ring`)."""
    n_tokens: int = Field(65536, ge=1024, le=MAX_QUEUE_TOKENS)
    n_entries: int = Field(8192, ge=64, le=1 << 20)
    collapse_window_s: float = Field(5.0, ge=0, le=3600)      # repeats fold over this (the summaries' base window)
    # Read less, by budget (gateway/pipeline/reading_budget.py): the share of the engine's measured reading
    # rate the feed sends (0: no budget); the backlog, in seconds of reading, past which only alerted and
    # new lines go verbatim; the widest summary window before a summary still without budget is skipped.
    read_share: float = Field(0.8, ge=0, le=1)
    target_lag_s: float = Field(5.0, gt=0, le=600)
    max_window_s: float = Field(60.0, ge=0, le=3600)


class AlertSettings(_Section):
    mqtt_publish: bool = False
    mqtt_host: str = "127.0.0.1"
    mqtt_port: int = Field(1883, ge=1, le=65535)
    topic_prefix: str = "linegate/alerts"
    alert_budget_ms: float = Field(15_000, gt=0, le=MAX_BUDGET_MS)
    # First token of an operator's answer. The 1.5B on a 2-core CPU prefills ~10-40 ms/token,
    # so a question with quoted log lines needs several seconds; 3 s refused almost everything.
    ttft_budget_ms: float = Field(12_000, gt=0, le=MAX_BUDGET_MS)
    explanation_max_tokens: int = Field(64, ge=1, le=1024)
    explain: list[Literal["new_template", "severity", "rule"]] = Field(default_factory=lambda: ["severity", "rule"])

    @field_validator("topic_prefix")
    @classmethod
    def _topic(cls, v: str) -> str:
        if not v or any(c in v for c in "+#\x00") or v.startswith("/") or v.endswith("/"):
            raise ValueError(f"alerts.topic_prefix {v!r}: no MQTT wildcards, no leading/trailing '/'")
        return v


class UiSettings(_Section):
    # The language of what the appliance writes on its own: alert explanations. (Chat answers follow
    # the question's language; the web UI's strings follow the browser, switchable.)
    language: Literal["en", "zh-CN"] = "en"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LINEGATE_", env_nested_delimiter="__", extra="forbid")

    data_dir: Path = Path("data")
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    token_queue: TokenQueueSettings = Field(default_factory=TokenQueueSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    ui: UiSettings = Field(default_factory=UiSettings)
    # [fleet]: ship this box's lines to the plant's ClickHouse (docs/fleet.md); no urls: the box ships nothing
    fleet: FleetSettings = Field(default_factory=FleetSettings)

    @model_validator(mode="before")
    @classmethod
    def _renamed_sections(cls, data: Any) -> Any:
        # [ring] is read as [token_queue] for one release ("ring" now means only the KV ring)
        return read_old_name(data, "ring", "token_queue", "settings: the [ring] section is deprecated: name it "
                             "[token_queue] (LINEGATE_TOKEN_QUEUE__*)")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> "Settings":
        if self.data_dir.resolve() == Path("/"):
            raise ValueError("data_dir = '/' is refused: give the appliance its own folder")
        if self.engine.n_sink + self.engine.n_ring + self.engine.n_scratch > MAX_N_RING + MAX_N_SCRATCH:
            raise ValueError("engine.n_sink + n_ring + n_scratch is too large")
        e = self.engine
        if e.kv_policy in ("semantic", "novelty") and (e.n_ring % e.kv_block or e.n_ring < 2 * e.kv_block):
            raise ValueError(f"engine.kv_policy = {e.kv_policy} needs engine.n_ring ({e.n_ring}) to be a multiple of "
                             f"engine.kv_block ({e.kv_block}), at least two blocks")
        return self

    @property
    def cache_dir(self) -> Path:
        """Files the appliance can remake (the kernel plan): <data_dir>/cache."""
        return self.data_dir / "cache"

    @property
    def store_path(self) -> Path:
        return self.store.path if self.store.path is not None else self.data_dir / "logs.db"

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if _TOML_FILE is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=_TOML_FILE))
        return tuple(sources)


_TOML_FILE: Path | None = None   # set only for the duration of load()


def load(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from `path` (TOML; optional) + LINEGATE_* environment + keyword overrides (highest).

    Raises SettingsError naming the file and the key."""
    global _TOML_FILE
    where = "environment"
    if path is not None:
        path = Path(path)
        where = str(path)
        if not path.is_file():
            raise SettingsError(f"settings file {path} does not exist")
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"settings file {path} is not valid TOML: {exc}") from exc
    try:
        _TOML_FILE = path
        return Settings(**overrides)
    except ValidationError as exc:
        msgs = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(top level)"
            msgs.append(f"{key}: {err['msg']}")
        raise SettingsError(f"bad settings ({where}): " + "; ".join(msgs)) from None
    finally:
        _TOML_FILE = None
