"""Renders a model's chat template (jinja2, from the GGUF) the way transformers' `apply_chat_template` does.

Same jinja environment (sandboxed, trim_blocks, lstrip_blocks, loopcontrols) and the same helpers templates
call (raise_exception, tojson without HTML escaping, strftime_now). Knows nothing about token ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class ChatTemplateError(ValueError):
    """A conversation the template refuses, or a template that does not compile."""


def _raise_exception(message: str):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    # jinja's own tojson escapes <, >, & for HTML; a prompt must carry them verbatim.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _plain(value):
    """Messages as plain dicts/lists, without keys whose value is None (a template tests presence, not None)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class ChatTemplate:
    def __init__(self, source: str, variables: Mapping[str, str] | None = None):
        """`variables`: names every render sees (bos_token, eos_token, ...), as transformers passes them."""
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = _strftime_now
        try:
            self._template = env.from_string(source)
        except jinja2.exceptions.TemplateSyntaxError as exc:
            raise ChatTemplateError(f"chat template does not compile: {exc} (line {exc.lineno})") from exc
        self.source = source
        self._variables = dict(variables or {})

    def render(
        self,
        messages: Sequence[Mapping],
        *,
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping] | None = None,
        documents: Sequence[Mapping] | None = None,
        **kwargs,
    ) -> str:
        if not messages:
            raise ChatTemplateError("cannot render an empty conversation: give at least one message")
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
                raise ChatTemplateError(f"message {index} must be a mapping with a string 'role', got {message!r}")
        context = {**self._variables, **kwargs}
        try:
            return self._template.render(
                messages=_plain(messages),
                tools=_plain(tools),
                documents=_plain(documents),
                add_generation_prompt=add_generation_prompt,
                **_plain(context),
            )
        except jinja2.exceptions.TemplateError as exc:
            raise ChatTemplateError(f"chat template refused the conversation: {exc}") from exc
