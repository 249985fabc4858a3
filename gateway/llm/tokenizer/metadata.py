"""Reads the tokenizer part of a GGUF's metadata (llama.cpp's `tokenizer.*` keys) into plain Python values.

Uses the native reader (gateway._native.GGUFFile) when it is built, else the `gguf` package's GGUFReader.
Knows nothing about BPE or chat templates: it only validates and hands over what the file says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# GGUF token types (llama.cpp's llama_token_type).
TOKEN_NORMAL = 1
TOKEN_UNKNOWN = 2
TOKEN_CONTROL = 3
TOKEN_USER_DEFINED = 4
TOKEN_UNUSED = 5
TOKEN_BYTE = 6


class TokenizerMetadataError(ValueError):
    """The GGUF's tokenizer metadata is missing or inconsistent; the message names the file and key."""


@dataclass(frozen=True)
class TokenizerMetadata:
    path: Path
    architecture: str
    model: str  # tokenizer.ggml.model, e.g. "gpt2" (byte-level BPE)
    pre: str | None  # tokenizer.ggml.pre, e.g. "qwen2", "smollm"
    tokens: list[str]  # [n_vocab]
    token_type: list[int]  # [n_vocab]
    merges: list[str]  # "left right", best first
    bos_id: int | None
    eos_id: int | None
    eot_id: int | None
    unk_id: int | None
    pad_id: int | None
    add_bos: bool
    add_eos: bool
    chat_template: str | None
    reader: str = field(default="", compare=False)  # which GGUF reader produced this: "native" or "gguf"

    @property
    def n_vocab(self) -> int:
        return len(self.tokens)


def _open_values(path: Path):
    """(reader name, `get(key) -> value | None`) over the file's metadata, from the fastest reader available."""
    try:
        from gateway import _native  # built by `make native`; optional here
    except ImportError:
        _native = None
    if _native is not None and hasattr(_native, "GGUFFile"):
        try:
            handle = _native.GGUFFile(str(path))
        except _native.GGUFError as exc:
            raise TokenizerMetadataError(f"{path}: not a readable GGUF: {exc}") from exc
        return "native", handle.get
    return "gguf", _reader_values(path)


def _reader_values(path: Path):
    """Fallback through gguf.GGUFReader (slow on big vocabularies: it builds a view per array element)."""
    from gguf import GGUFReader   # heavy fallback: only when the native module is not built

    try:
        reader = GGUFReader(str(path))
    except (ValueError, OSError) as exc:
        raise TokenizerMetadataError(f"{path}: not a readable GGUF: {exc}") from exc

    def get(key: str):
        field = reader.fields.get(key)
        return None if field is None else field.contents()

    return get


def read_tokenizer_metadata(path: str | Path, *, use_native: bool = True) -> TokenizerMetadata:
    path = Path(path)
    if not path.is_file():
        raise TokenizerMetadataError(f"{path}: no such GGUF file")
    reader, get = _open_values(path) if use_native else ("gguf", _reader_values(path))

    def required(key: str):
        value = get(key)
        if value is None:
            raise TokenizerMetadataError(f"{path}: metadata key {key!r} is missing")
        return value

    tokens = list(required("tokenizer.ggml.tokens"))
    n_vocab = len(tokens)
    if n_vocab == 0:
        raise TokenizerMetadataError(f"{path}: 'tokenizer.ggml.tokens' is empty")
    token_type = get("tokenizer.ggml.token_type")
    token_type = [TOKEN_NORMAL] * n_vocab if token_type is None else [int(t) for t in token_type]
    if len(token_type) != n_vocab:
        raise TokenizerMetadataError(
            f"{path}: 'tokenizer.ggml.token_type' has {len(token_type)} entries, 'tokenizer.ggml.tokens' {n_vocab}"
        )

    def token_id(key: str) -> int | None:
        value = get(key)
        if value is None:
            return None
        if not 0 <= int(value) < n_vocab:
            raise TokenizerMetadataError(f"{path}: {key!r} = {value} is outside the vocabulary (n_vocab {n_vocab})")
        return int(value)

    template = get("tokenizer.chat_template")
    return TokenizerMetadata(
        path=path,
        architecture=str(required("general.architecture")),
        model=str(required("tokenizer.ggml.model")),
        pre=get("tokenizer.ggml.pre"),
        tokens=tokens,
        token_type=token_type,
        merges=list(get("tokenizer.ggml.merges") or []),
        bos_id=token_id("tokenizer.ggml.bos_token_id"),
        eos_id=token_id("tokenizer.ggml.eos_token_id"),
        eot_id=token_id("tokenizer.ggml.eot_token_id"),
        unk_id=token_id("tokenizer.ggml.unknown_token_id"),
        pad_id=token_id("tokenizer.ggml.padding_token_id"),
        add_bos=bool(get("tokenizer.ggml.add_bos_token") or False),
        add_eos=bool(get("tokenizer.ggml.add_eos_token") or False),
        chat_template=None if template is None else str(template),
        reader=reader,
    )
