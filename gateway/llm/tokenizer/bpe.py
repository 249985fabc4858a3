"""Text <-> token ids for a GGUF model, built only from the file's own tokenizer metadata.

Owns the byte-level BPE (run by the `tokenizers` library), special tokens, stop tokens and the chat prompt.
Knows nothing about model weights, the KV cache, or where the text comes from.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as BPETokenizer

from gateway.llm.tokenizer.chat_template import ChatTemplate, ChatTemplateError
from gateway.llm.tokenizer.metadata import (
    TOKEN_CONTROL,
    TOKEN_USER_DEFINED,
    TokenizerMetadata,
    TokenizerMetadataError,
    read_tokenizer_metadata,
)

__all__ = ["Tokenizer", "TokenizerError", "ChatTemplateError", "StreamDecoder"]

# How text is cut into words before BPE, by `tokenizer.ggml.pre`. These are the splits the vocabularies were
# trained with (the models' tokenizer.json; llama.cpp's llama-vocab.cpp uses the same ones).
# qwen2: one digit per word, letters with one leading non-letter, punctuation runs with trailing newlines.
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _qwen2_pre():
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def _smollm_digits_pre():
    # StarCoder-style: every digit is its own word, then GPT-2's split: what llama.cpp runs for pre "smollm".
    # Opt-in (pre="smollm-digits"); the default for "smollm" files is transformers' reading, see PRE_TOKENIZERS.
    # The two differ only where a number follows whitespace: "a  1" is [a][ĠĠ][1] here, [a][Ġ][Ġ][1] in
    # transformers, and " ½" is [Ġ][Â½] here, [ĠÂ][½] there (tests/test_tokenizer.py checks both splits).
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )


def _gpt2_pre():
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


PRE_TOKENIZERS = {
    "qwen2": _qwen2_pre,
    "deepseek-r1-qwen": _qwen2_pre,
    # transformers' GGUF loader (the reference this project is checked against) reads "smollm" as GPT-2's
    # split alone; the default follows it so that ids equal transformers' on every text.
    "smollm": _gpt2_pre,
    "smollm-digits": _smollm_digits_pre,
    "gpt2": _gpt2_pre,
    "default": _gpt2_pre,
}

# Words whose BPE result is kept (tokenizers' default is 10,000): log lines repeat their words across many
# lines; a bigger cache was faster on Loghub (one run of tools/bench/bench_tokenizer.py: 24.1k -> 25.9k lines/cpu-s).
BPE_CACHE_WORDS = 262_144

_MARKER = re.compile("\ue000([0-9]+)\ue001")

# Control tokens that end a turn in the chat formats we meet, besides the file's eos/eot ids.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "</s>")


class TokenizerError(ValueError):
    """The GGUF describes a tokenizer we cannot build, or an id is out of range."""


@lru_cache(maxsize=1)
def _byte_alphabet() -> dict[int, str]:
    """GPT-2's byte -> printable character map that byte-level vocabularies are spelled in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@lru_cache(maxsize=1)
def _alphabet_bytes() -> dict[str, int]:
    return {c: b for b, c in _byte_alphabet().items()}


def _spell(token: str) -> str:
    """A token's byte-level spelling (what the BPE vocabulary looks it up by)."""
    return "".join(_byte_alphabet()[b] for b in token.encode("utf-8"))


def _build_backend(meta: TokenizerMetadata, pre: str | None) -> BPETokenizer:
    if meta.model != "gpt2":
        raise TokenizerError(
            f"{meta.path}: tokenizer.ggml.model = {meta.model!r}; only byte-level BPE ('gpt2') is supported"
        )
    pre_name = pre or meta.pre or "default"
    if pre_name not in PRE_TOKENIZERS:
        raise TokenizerError(
            f"{meta.path}: tokenizer.ggml.pre = {pre_name!r} is not known; known: {sorted(PRE_TOKENIZERS)}"
        )
    if not meta.merges:
        raise TokenizerError(f"{meta.path}: byte-level BPE needs 'tokenizer.ggml.merges', which is missing or empty")

    alphabet = set(_byte_alphabet().values())
    # A token spelled outside the byte alphabet is stored as raw text; look it up by its byte-level spelling.
    vocab = {(t if set(t) <= alphabet else _spell(t)): i for i, t in enumerate(meta.tokens)}
    if len(vocab) != meta.n_vocab:
        raise TokenizerError(f"{meta.path}: 'tokenizer.ggml.tokens' holds duplicate tokens")
    merges = []
    for index, merge in enumerate(meta.merges):
        left, _, right = merge.partition(" ")
        if not left or not right or " " in right:
            raise TokenizerError(f"{meta.path}: 'tokenizer.ggml.merges'[{index}] = {merge!r} is not 'left right'")
        merges.append((left, right))

    bpe = models.BPE(vocab=vocab, merges=merges, cache_capacity=BPE_CACHE_WORDS, fuse_unk=False, byte_fallback=False)
    backend = BPETokenizer(bpe)
    backend.pre_tokenizer = PRE_TOKENIZERS[pre_name]()
    backend.decoder = decoders.ByteLevel()
    # Control tokens are matched whole and are "special"; user-defined ones (<tool_call>) are matched whole but
    # are ordinary text. A control token spelled outside the byte alphabet would be a new id: skip it, as
    # transformers does, so the vocabulary keeps the size the model's embedding has.
    control = [
        AddedToken(t, special=True, normalized=False)
        for t, kind in zip(meta.tokens, meta.token_type)
        if kind == TOKEN_CONTROL and set(t) <= alphabet
    ]
    user = [
        AddedToken(t, special=False, normalized=False)
        for t, kind in zip(meta.tokens, meta.token_type)
        if kind == TOKEN_USER_DEFINED and t in vocab
    ]
    backend.add_special_tokens(control)
    backend.add_tokens(user)
    if backend.get_vocab_size(with_added_tokens=True) != meta.n_vocab:
        raise TokenizerError(f"{meta.path}: added tokens changed the vocabulary size (expected {meta.n_vocab})")
    return backend


def _check_unicode(texts: Sequence) -> None:
    """Turns the backend's bare TypeError into one naming the text and what is wrong with it."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TokenizerError(f"text {index} is {type(text).__name__}, not str")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TokenizerError(f"text {index} is not valid Unicode: {exc.reason} at offset {exc.start}") from exc


class Tokenizer:
    """Byte-level BPE tokenizer of one GGUF model. Thread-safe for encode/decode (the backend is)."""

    def __init__(self, meta: TokenizerMetadata, *, pre: str | None = None):
        """`pre` overrides the file's tokenizer.ggml.pre (a key of PRE_TOKENIZERS); None keeps the file's."""
        self.meta = meta
        self.path = meta.path
        self.n_vocab = meta.n_vocab
        self.pre = pre or meta.pre or "default"
        self._backend = _build_backend(meta, self.pre)
        # Same vocabulary, but control tokens written in the text are encoded as the characters they are:
        # the form for untrusted text (log lines, operator questions), so "<|im_end|>" in a log cannot end a turn.
        self._plain = _build_backend(meta, self.pre)
        self._plain.encode_special_tokens = True
        self.tokens: list[str] = list(meta.tokens)
        # Bytes with no token of their own: BPE drops them from the text, silently, as transformers and
        # llama.cpp do (SmolLM2 lacks a few control bytes and UTF-8 lead bytes 0xF1/0xF2; Qwen2 lacks none).
        self.missing_bytes = frozenset(b for b, c in _byte_alphabet().items() if self._backend.token_to_id(c) is None)
        alphabet = set(_byte_alphabet().values())
        self.special_ids = frozenset(
            i for i, (t, k) in enumerate(zip(meta.tokens, meta.token_type)) if k == TOKEN_CONTROL and set(t) <= alphabet
        )
        self.bos_id = meta.bos_id
        self.eos_id = meta.eos_id
        self.pad_id = meta.pad_id
        self.add_bos = meta.add_bos
        self.add_eos = meta.add_eos
        by_text = {t: i for i, t in enumerate(meta.tokens)}
        stops = {i for i in (meta.eos_id, meta.eot_id) if i is not None}
        stops |= {by_text[t] for t in END_OF_TURN_TOKENS if t in by_text and by_text[t] in self.special_ids}
        self.stop_ids = frozenset(stops)
        self.eot_id = meta.eot_id if meta.eot_id is not None else by_text.get("<|im_end|>", meta.eos_id)
        self._control_ids = {self.tokens[i]: i for i in sorted(self.special_ids)}
        # Longest first, so a control token that starts another is not matched in its place.
        names = sorted(self._control_ids, key=len, reverse=True)
        self._control_re = re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else re.compile("(?!)")
        self.chat_template: ChatTemplate | None = None
        if meta.chat_template:
            self.chat_template = ChatTemplate(meta.chat_template, self.special_tokens_map)

    # --- construction --------------------------------------------------------

    @classmethod
    def from_gguf(cls, path: str | Path, *, pre: str | None = None, use_native: bool = True) -> Tokenizer:
        try:
            return cls(read_tokenizer_metadata(path, use_native=use_native), pre=pre)
        except TokenizerMetadataError as exc:
            raise TokenizerError(str(exc)) from exc

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """bos/eos/unk/pad as strings: the names chat templates may use."""
        ids = {"bos_token": self.meta.bos_id, "eos_token": self.meta.eos_id, "unk_token": self.meta.unk_id}
        ids["pad_token"] = self.meta.pad_id
        return {name: self.tokens[i] for name, i in ids.items() if i is not None}

    # --- text -> ids ---------------------------------------------------------

    def _wrap(self, ids: list[int], add_special: bool) -> list[int]:
        if add_special:
            if self.add_bos and self.bos_id is not None:
                ids = [self.bos_id, *ids]
            if self.add_eos and self.eos_id is not None:
                ids = [*ids, self.eos_id]
        return ids

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Token ids of `text`. `parse_special`: control tokens written in the text become their ids (trusted
        text such as a rendered chat prompt); False encodes them as plain characters (untrusted text).
        `add_special`: add bos/eos if the GGUF asks for them (neither model here does).
        Bytes in `missing_bytes` have no token and are dropped."""
        backend = self._backend if parse_special else self._plain
        try:
            return self._wrap(backend.encode(text, add_special_tokens=False).ids, add_special)
        except TypeError:
            _check_unicode([text])
            raise

    def encode_batch(
        self, texts: Sequence[str], *, add_special: bool = False, parse_special: bool = True
    ) -> list[list[int]]:
        """encode() of each text; runs in the `tokenizers` thread pool (RAYON_NUM_THREADS / TOKENIZERS_PARALLELISM)."""
        backend = self._backend if parse_special else self._plain
        texts = list(texts)
        try:
            encodings = backend.encode_batch_fast(texts, add_special_tokens=False)
        except TypeError:
            _check_unicode(texts)
            raise
        return [self._wrap(e.ids, add_special) for e in encodings]

    def apply_chat_template(
        self,
        messages: Sequence[Mapping],
        *,
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping] | None = None,
        **kwargs,
    ) -> str:
        """The prompt text the model was tuned on, identical to transformers' `apply_chat_template(tokenize=False)`."""
        if self.chat_template is None:
            raise TokenizerError(f"{self.path}: the GGUF has no 'tokenizer.chat_template'")
        return self.chat_template.render(messages, add_generation_prompt=add_generation_prompt, tools=tools, **kwargs)

    def encode_chat(self, messages: Sequence[Mapping], *, add_generation_prompt: bool = True) -> list[int]:
        """Token ids of the chat prompt, where only the template's own control tokens are special: a control
        token typed inside a message's content is encoded as text. Equal to encode(apply_chat_template(...))
        whenever no content contains a control token."""
        return self.encode_chat_pieces(messages, add_generation_prompt=add_generation_prompt)[0]

    def encode_chat_pieces(self, messages: Sequence[Mapping], *, cut: str | None = None,
                           add_generation_prompt: bool = True) -> list[list[int]]:
        """encode_chat, cut into pieces where `cut` (a string) stands in a message's content: the cut is
        not encoded, and the text on either side is encoded apart (what a prompt whose middle part is
        tokenized elsewhere, such as a live log, needs). Without cut: one piece."""
        # Render with each content replaced by a marker from Unicode's private use area, find the control
        # tokens in the template's own text only, then put the contents back and encode the text between those
        # control tokens with them off. The backend cuts text at control tokens before BPE anyway, so cutting
        # there ourselves changes no token.
        contents: list[str] = []
        marked = []
        for message in messages:
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, str):
                marked.append({**message, "content": f"\ue000{len(contents)}\ue001"})
                contents.append(content)
            else:
                marked.append(message)
        prompt = self.apply_chat_template(marked, add_generation_prompt=add_generation_prompt)
        pieces = _MARKER.split(prompt)  # template text, content index, template text, ...
        seen = sorted(int(i) for i in pieces[1::2])
        if seen != list(range(len(contents))):
            raise ChatTemplateError("the chat template did not copy each message's content verbatim, once")
        out = _ChatPieces(self)
        for index, piece in enumerate(pieces):
            if index % 2:
                content = contents[int(piece)]
                parts = content.split(cut) if cut else [content]
                out.text += parts[0]
                for part in parts[1:]:
                    out.cut()
                    out.text = part
                continue
            for part in self._control_re.split(piece):
                if part in self._control_ids:
                    out.control(self._control_ids[part])
                else:
                    out.text += part
        out.flush()
        return out.pieces

    # --- ids -> text ---------------------------------------------------------

    def _check_ids(self, ids: Sequence[int]) -> None:
        for i in ids:
            if not 0 <= i < self.n_vocab:
                raise TokenizerError(f"token id {i} is outside the vocabulary (n_vocab {self.n_vocab})")

    def decode(self, ids: Sequence[int], *, skip_special: bool = False) -> str:
        """Text of `ids`; bytes that do not form whole UTF-8 characters become U+FFFD (use token_bytes to stream)."""
        ids = list(ids)
        self._check_ids(ids)
        return self._backend.decode(ids, skip_special_tokens=skip_special)

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes token `token_id` stands for (a control token: its UTF-8 text)."""
        self._check_ids([token_id])
        token = self.tokens[token_id]
        table = _alphabet_bytes()
        if token_id in self.special_ids or not set(token) <= table.keys():
            return token.encode("utf-8")
        return bytes(table[c] for c in token)

    def token_str(self, token_id: int) -> str:
        """The token as the vocabulary spells it (byte-level characters, e.g. 'Ġhello')."""
        self._check_ids([token_id])
        return self.tokens[token_id]

    def token_id(self, token: str) -> int | None:
        """Id of a token spelled as the vocabulary spells it, or None."""
        return self._backend.token_to_id(token)

    def stream_decoder(self, *, skip_special: bool = False) -> StreamDecoder:
        return StreamDecoder(self, skip_special=skip_special)

    def is_stop(self, token_id: int) -> bool:
        return token_id in self.stop_ids

    def __len__(self) -> int:
        return self.n_vocab

    def __repr__(self) -> str:
        return f"Tokenizer({self.path.name}, n_vocab={self.n_vocab}, pre={self.pre!r})"


class _ChatPieces:
    """encode_chat_pieces' output: text gathers until a control token or a cut flushes it (encoded plain)."""

    def __init__(self, tokenizer: Tokenizer):
        self._tokenizer = tokenizer
        self.pieces: list[list[int]] = [[]]
        self.text = ""

    def flush(self) -> None:
        if self.text:
            self.pieces[-1] += self._tokenizer.encode(self.text, parse_special=False)
        self.text = ""

    def control(self, token_id: int) -> None:
        self.flush()
        self.pieces[-1].append(token_id)

    def cut(self) -> None:
        self.flush()
        self.pieces.append([])


class StreamDecoder:
    """Text of generated tokens as they come, one id at a time: a character split across tokens (CJK, emoji)
    comes out once its last byte has. The pieces joined equal decode() of all the ids."""

    def __init__(self, tokenizer: Tokenizer, *, skip_special: bool = False):
        self._tokenizer = tokenizer
        self._skip_special = skip_special
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token_id: int) -> str:
        if self._skip_special and token_id in self._tokenizer.special_ids:
            return ""
        return self._utf8.decode(self._tokenizer.token_bytes(token_id))

    def flush(self) -> str:
        """What is left at the end (an unfinished character becomes U+FFFD)."""
        return self._utf8.decode(b"", final=True)
