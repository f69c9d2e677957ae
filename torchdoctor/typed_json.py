"""Typed records over untrusted JSON: one dataclass definition to load, validate and describe.

A record class is a frozen, keyword-only dataclass deriving from ``Record``. Its annotations are
the whole definition: ``load`` checks a parsed JSON document against them and builds the typed
record, ``schema`` writes the same definition out as JSON Schema. So the record the code reads,
the files it accepts and the schema it publishes cannot drift apart.

The rules follow what torchdoctor's gatherers write:
- a field may be absent (older records, another platform); unknown fields are kept in ``raw``
  (newer writers add fields) but never read;
- a scalar may be null ("could not be read") and reads as None; so does an absent one;
- objects and lists are never null; an absent one reads as empty (an empty record is falsy, like
  the empty object it stands for), so ``facts.torch.build.cuda`` never needs a guard;
- ``Required`` fields must be there, not null, whenever their object is;
- ``Version`` strings must start like a version; ``Count`` lists hold exactly that many items.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from functools import cache
from typing import Any, ClassVar, TypeVar, get_args, get_origin

R = TypeVar("R", bound="Record")

# Nesting deeper than this is no torchdoctor record (ours are < 10 deep), and unbounded depth
# would exhaust the recursion limit of anything that walks the document (redact, json.dumps).
MAX_DEPTH = 40


class ShapeError(ValueError):
    """One line naming the first field that does not fit, e.g. "field 'torch.version' must be a
    string, got list"."""


@dataclasses.dataclass(frozen=True)
class Version:
    """A string the checks parse as a version: it must start with ``pattern``."""

    pattern: str
    example: str


@dataclasses.dataclass(frozen=True)
class Count:
    """A list of exactly ``n`` items (a compute capability is [major, minor])."""

    n: int


class _Required:
    def __repr__(self) -> str:
        return "Required"


Required = _Required()  # Annotated marker: must be present and not null when its object is


class Record:
    """Base of every typed record: the source object stays reachable as ``raw``."""

    __slots__ = ()
    DESCRIPTION: ClassVar[str] = ""

    @property
    def raw(self) -> dict[str, Any]:
        """The JSON object this record was loaded from, unknown fields included ({} when absent)."""
        return getattr(self, "_raw", None) or {}

    def __bool__(self) -> bool:
        return bool(self.raw)


# --- reading a definition --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    kind: Any  # the type with Annotated and Optional stripped
    nullable: bool
    required: bool
    version: Version | None
    count: Count | None


@cache
def fields_of(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return tuple(_field(f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _field(name: str, hint: Any) -> _Field:
    meta: tuple[Any, ...] = ()
    if get_origin(hint) is typing.Annotated:
        hint, *extra = get_args(hint)
        meta = tuple(extra)
    nullable = False
    if get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        nullable = len(args) < len(get_args(hint))
        hint = args[0] if len(args) == 1 else hint
    version = next((m for m in meta if isinstance(m, Version)), None)
    count = next((m for m in meta if isinstance(m, Count)), None)
    return _Field(name, hint, nullable, Required in meta, version, count)


def _is_record(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, Record)


def empty(cls: type[R]) -> R:
    """The record of an absent object: scalars None, objects empty, lists and maps empty."""
    return cls(**{f.name: _absent(f) for f in fields_of(cls)})


def _absent(f: _Field) -> Any:
    if f.nullable:  # declared ``X | None``: absence is itself a fact (e.g. "never looked")
        return None
    if _is_record(f.kind):
        return empty(f.kind)
    origin = get_origin(f.kind)
    if origin is list:
        return []
    if origin is dict or f.kind is dict:
        return {}
    return None


# --- loading ---------------------------------------------------------------------------------

_JSON_NAMES = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "list"),
    (dict, "object"),
)  # fmt: skip


def type_name(value: Any) -> str:
    """JSON's name for a value's type, as the user sees it in the file."""
    if value is None:
        return "null"
    return next((name for t, name in _JSON_NAMES if isinstance(value, t)), type(value).__name__)


def _expected(kind: Any) -> str:
    if kind is float:
        return "a number"
    if _is_record(kind) or get_origin(kind) is dict or kind is dict:
        return "an object"
    if get_origin(kind) is list:
        return "a list"
    return {str: "a string", bool: "a boolean", int: "an integer"}.get(kind, "a value")


def _fits(value: Any, kind: Any) -> bool:
    if kind is Any:
        return True
    if _is_record(kind) or get_origin(kind) is dict or kind is dict:
        return isinstance(value, dict)
    if get_origin(kind) is list:
        return isinstance(value, list)
    if isinstance(value, bool):  # bool is an int in Python, never in JSON
        return kind is bool
    if kind is float:  # JSON has one number type: 3 and 3.0 are both a number
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def load(cls: type[R], data: Any, where: str = "", errors: list[str] | None = None) -> R:
    """The typed record of ``data``; ``ShapeError`` names the first field that does not fit.

    With an ``errors`` list the load is lenient instead (facts gathered live, or parsed from a
    pasted report, are not the user's file to refuse): each field or item that does not fit is
    read as absent and its one-line problem appended to ``errors``."""
    if not isinstance(data, dict):
        raise ShapeError(
            f"field {where or 'the document'!r} must be an object, got {type_name(data)}"
        )
    values = {}
    for f in fields_of(cls):
        at = _join(where, f.name)
        try:
            if f.name not in data:
                if f.required:
                    raise ShapeError(f"field {at!r} is missing")
                values[f.name] = _absent(f)
            else:
                values[f.name] = _value(f, data[f.name], at, f.nullable and not f.required, errors)
        except ShapeError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            values[f.name] = _absent(f)
    record = cls(**values)
    object.__setattr__(record, "_raw", data)
    return record


def _value(f: _Field, value: Any, where: str, nullable: bool, errors: list[str] | None) -> Any:
    if value is None and nullable:
        return None
    if f.version is not None:
        if not isinstance(value, str) or not re.match(f.version.pattern, value):
            got = repr(value)[:40] if isinstance(value, str) else type_name(value)
            raise ShapeError(
                f"field {where!r} must be a version like {f.version.example!r}, got {got}"
            )
        return value
    if f.count is not None and isinstance(value, list) and len(value) != f.count.n:
        raise ShapeError(f"field {where!r} must hold {f.count.n} items, got {len(value)}")
    return _convert(f.kind, value, where, errors)


def _convert(kind: Any, value: Any, where: str, errors: list[str] | None) -> Any:
    if not _fits(value, kind):
        raise ShapeError(f"field {where!r} must be {_expected(kind)}, got {type_name(value)}")
    if _is_record(kind):
        return load(kind, value, where, errors)
    origin, args = get_origin(kind), get_args(kind)
    if origin is list and args:
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
        return [v for v in _items(args[0], items, errors) if v is not _BAD]
    if origin is dict and args and args[1] is not Any:
        keys = list(value)
        items = ((_join(where, k), value[k]) for k in keys)
        pairs = zip(keys, _items(args[1], items, errors), strict=True)
        return {k: v for k, v in pairs if v is not _BAD}
    return value


_BAD = object()  # a list item or map value left out by a lenient load


def _items(kind: Any, items: Any, errors: list[str] | None) -> Any:
    """List items and map values: never null unless their type says so."""
    f = _field("", kind)
    for where, value in items:
        try:
            if value is None and f.nullable:
                yield None
            elif f.version is not None or f.count is not None:
                yield _value(f, value, where, False, errors)
            else:
                yield _convert(f.kind, value, where, errors)
        except ShapeError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            yield _BAD


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Is any container nested more than ``limit`` deep? (Iterative: no recursion to exhaust.)"""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


# --- JSON Schema ------------------------------------------------------------------------------

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def schema(cls: type[Record], title: str, schema_id: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) that accepts what ``load(cls, ...)`` accepts."""
    defs: dict[str, Any] = {}
    root = _object_schema(cls, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def _object_schema(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    props = {f.name: _field_schema(f, defs) for f in fields_of(cls)}
    out: dict[str, Any] = {"type": "object"}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    out["properties"] = props
    required = [f.name for f in fields_of(cls) if f.required]
    if required:
        out["required"] = required
    return out


def _field_schema(f: _Field, defs: dict[str, Any]) -> dict[str, Any]:
    s = _kind_schema(f.kind, defs)
    if f.version is not None:
        s["pattern"] = "^" + f.version.pattern
    if f.count is not None:
        s["minItems"] = s["maxItems"] = f.count.n
    if f.nullable and not f.required:
        if "$ref" in s:
            return {"anyOf": [s, {"type": "null"}]}
        if "type" in s:
            s["type"] = [s["type"], "null"]
    return s


def _kind_schema(kind: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if _is_record(kind):
        if kind.__name__ not in defs:
            defs[kind.__name__] = {}  # placeholder: records may nest themselves
            defs[kind.__name__] = _object_schema(kind, defs)
        return {"$ref": f"#/$defs/{kind.__name__}"}
    origin, args = get_origin(kind), get_args(kind)
    if origin is list:
        return (
            {"type": "array", "items": _item_schema(args[0], defs)} if args else {"type": "array"}
        )
    if origin is dict or kind is dict:
        if args and args[1] is not Any:
            return {"type": "object", "additionalProperties": _item_schema(args[1], defs)}
        return {"type": "object"}
    if kind is Any:
        return {}
    return {"type": _JSON_TYPES[kind]}


def _item_schema(kind: Any, defs: dict[str, Any]) -> dict[str, Any]:
    return _field_schema(_field("", kind), defs)  # an item: its own type, never "required"
