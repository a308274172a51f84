"""Typed options for passes and named pipelines, parsed from MLIR's textual form.

A pass or pipeline declares its options as the fields of a frozen dataclass;
``lowerline-foo{max-depth=4 enable}`` sets ``max_depth=4`` and ``enable=True``.
Supported field types: bool, int, float, str and ``list[int]`` / ``list[str]``
(``sizes=8,32`` or ``sizes={8,32}``; stored as tuples so the dataclass stays
hashable). A field may name the values it accepts (``opt(..., check=one_of(
"a", "b"))`` or any function that raises ``ValueError``): they are checked
when the options are parsed, so a bad value is reported in the pipeline text,
before any pass runs.
"""

from __future__ import annotations

import dataclasses
import shlex
import typing
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], None]


class OptionError(ValueError):
    """A bad option in pipeline text: unknown name, or a value of the wrong type."""


def option_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def describe_type(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        return f"list of {typing.get_args(tp)[0].__name__}"
    return tp.__name__


def _convert(owner: str, name: str, tp: Any, raw: str | None) -> Any:
    if tp is bool:
        if raw is None or raw.lower() in ("true", "1"):
            return True
        if raw.lower() in ("false", "0"):
            return False
    elif raw is None:
        raise OptionError(f"option '{name}' of '{owner}' needs a value ({describe_type(tp)})")
    elif tp is int or tp is float:
        try:
            return tp(raw)
        except ValueError:
            pass
    elif tp is str:
        return raw
    elif typing.get_origin(tp) in (list, tuple):
        item = typing.get_args(tp)[0]
        body = raw[1:-1] if raw.startswith("{") and raw.endswith("}") else raw
        parts = [p.strip() for p in body.split(",") if p.strip()]
        try:
            return tuple(item(p) for p in parts)
        except ValueError:
            pass
    raise OptionError(f"option '{name}' of '{owner}' expects {describe_type(tp)}, got '{raw}'")


def _split_options(text: str) -> list[tuple[str, str | None]]:
    """Split ``a=1 b={x,y} c='s t' d`` into (key, value-or-None) pairs."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    pairs = []
    try:
        tokens = list(lexer)
    except ValueError as err:
        raise OptionError(f"cannot split options '{text}': {err}") from None
    for token in tokens:
        key, sep, value = token.partition("=")
        pairs.append((key, value if sep else None))
    return pairs


def _fields(cls: type, only: tuple[str, ...] | None) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if only is None or f.name in only]


def parse_options(cls: type, text: str, owner: str, only: tuple[str, ...] | None = None) -> Any:
    """Build an instance of the options dataclass ``cls`` from textual options.

    ``only`` limits the accepted options to those fields (a named pipeline
    shares one options class with its siblings but reads only some fields).
    """
    types = _field_types(cls)
    by_option = {option_name(f.name): f.name for f in _fields(cls, only)}
    values: dict[str, Any] = {}
    for key, raw in _split_options(text):
        if key not in by_option:
            known = ", ".join(sorted(by_option)) or "none"
            raise OptionError(f"'{owner}' has no option '{key}' (its options: {known})")
        field_name = by_option[key]
        values[field_name] = _convert(owner, key, types[field_name], raw)
    instance = cls(**values)
    check_values(instance, owner, only=tuple(values))
    return instance


def check_values(instance: Any, owner: str, only: tuple[str, ...] | None = None) -> None:
    """Run each field's ``check`` (``opt(check=...)``) on its value; the first
    refusal is an ``OptionError`` naming the option and ``owner``."""
    for f in _fields(type(instance), only):
        check = f.metadata.get("check")
        if check is None:
            continue
        try:
            check(getattr(instance, f.name))
        except ValueError as err:
            raise OptionError(f"option '{option_name(f.name)}' of '{owner}': {err}") from None


def one_of(*values: str) -> Check:
    """A ``check`` accepting exactly ``values``."""

    def check(value: Any) -> None:
        if value not in values:
            raise ValueError(f"'{value}' is not one of {', '.join(values)}")

    return check


def format_options(instance: Any) -> str:
    """The textual options of ``instance`` that differ from their defaults."""
    parts = []
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if value == f.default:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, tuple):
            value = ",".join(str(v) for v in value)
        parts.append(f"{option_name(f.name)}={value}")
    return " ".join(parts)


def describe_options(
    cls: type, only: tuple[str, ...] | None = None
) -> list[tuple[str, str, str, str]]:
    """(option name, type, default, help) for ``--list-passes``."""
    types = _field_types(cls)
    rows = []
    for f in _fields(cls, only):
        default = f.default
        if isinstance(default, bool):  # as written in pipeline text, not Python's True
            default = "true" if default else "false"
        elif isinstance(default, tuple):
            default = ",".join(str(v) for v in default)
        rows.append(
            (
                option_name(f.name),
                describe_type(types[f.name]),
                str(default),
                f.metadata.get("help", ""),
            )
        )
    return rows


def opt(default: Any, help: str, check: Check | None = None) -> Any:
    """A dataclass field with a help string for ``--list-passes`` and, when
    given, the ``check`` its values must pass."""
    metadata: dict[str, Any] = {"help": help}
    if check is not None:
        metadata["check"] = check
    return dataclasses.field(default=default, metadata=metadata)
