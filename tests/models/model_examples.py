"""Valid instances of every model, built from the field types (not collected by pytest).

`full(cls)` sets every field, optional ones included, to a non-default value, so a round
trip exercises every field; `text_strategy(cls, fixed)` is a hypothesis strategy giving
arbitrary unicode to every text field (keys and values of string dicts, items of string
lists, nested models included), keeping the fields in `fixed` (ids that rows point at).
"""

from __future__ import annotations

import enum
import types
import typing
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

from session import models as m

COMMIT = "0123456789abcdef0123456789abcdef01234567"
WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

# Fields whose valid values are not "any text of their type".
OVERRIDES: dict[tuple[type[BaseModel], str], Any] = {
    (m.Metric, "source"): m.MetricSource.REGEX,
    (m.Metric, "pattern"): r"time=(?P<value>[0-9.]+)",
    (m.Snapshot, "commit"): COMMIT,
    (m.PreflightAnswer, "kind"): m.PreflightAnswerKind.HANDED_OFF,
}


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _value(annotation: Any) -> Any:
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return args[-1]
    if origin is list:
        if isinstance(args[0], type) and issubclass(args[0], BaseModel):
            return [_value(args[0])]  # one: some lists need unique names
        return [_value(args[0]), _value(args[0])]
    if origin is dict:
        if args[1] is Any:
            return {"k": [1, "v", None, 0.5, {"n": True}]}
        return {"k": _value(args[1])}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return full(annotation)
        if issubclass(annotation, enum.Enum):
            return list(annotation)[-1]
        if annotation is bool:
            return True
        if annotation is int:
            return 3
        if annotation is float:
            return 0.5
        if annotation is str:
            return "text"
        if annotation is datetime:
            return WHEN
    if annotation is Any:
        return {"any": 1}
    raise TypeError(f"no example value for {annotation!r}")


def full(cls: type[BaseModel], **given: Any) -> Any:
    """A valid instance with every field set."""
    values = {}
    for name, info in cls.model_fields.items():
        if name in given:
            values[name] = given[name]
        elif (cls, name) in OVERRIDES:
            values[name] = OVERRIDES[(cls, name)]
        else:
            values[name] = _value(info.annotation)
    return cls(**values)


# Text fields with rules of their own: keep the drawn text but make it valid.
def _non_blank(text: str) -> str:
    return text if text.strip() else "x" + text


def _name(bad: str) -> typing.Callable[[str], str]:
    return lambda text: "x" + "".join(c for c in text if c not in bad) + "x"


FIXES: dict[tuple[type[BaseModel], str], typing.Callable[[str], str]] = {
    (m.Session, "title"): _non_blank,
    (m.Session, "repo"): _non_blank,
    (m.Hypothesis, "title"): _non_blank,
    (m.Workload, "command"): _non_blank,
    (m.Workload, "name"): _name("=,\n\t"),
    (m.Variant, "name"): _name(", \n\t"),
}
KEEP = {(m.Snapshot, "commit"), (m.Metric, "pattern")}

TEXT = st.text(max_size=40)


def _name_of(item: Any) -> Any:
    return getattr(item, "name", id(item))


def _text_strategy(annotation: Any, example: Any, fixed: dict[str, Any]) -> Any:
    """A strategy for one value of `annotation`, or None to keep the example."""
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is str:
        return TEXT
    if origin is list and args[0] is str:
        return st.lists(TEXT, max_size=3)
    if origin is list and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return st.lists(  # unique names: a contract's workloads must be
            text_strategy(args[0], fixed), min_size=1, max_size=2, unique_by=_name_of
        )
    if origin is dict and args[1] is str:
        return st.dictionaries(TEXT, TEXT, max_size=3)
    if origin is dict and args[1] is Any:
        return st.dictionaries(TEXT, st.one_of(TEXT, st.lists(TEXT, max_size=2)), max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return text_strategy(annotation, fixed)
    return None


def text_strategy(cls: type[BaseModel], fixed: dict[str, Any] | None = None) -> Any:
    """Instances of `cls` with arbitrary unicode (NUL included) in every text field."""
    fixed = fixed or {}
    example = full(cls)
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name in fixed:
            fields[name] = st.just(fixed[name])
            continue
        strategy = None
        if (cls, name) not in KEEP:
            strategy = _text_strategy(info.annotation, getattr(example, name), fixed)
        if strategy is None:
            fields[name] = st.just(getattr(example, name))
        elif (cls, name) in FIXES:
            fields[name] = strategy.map(FIXES[(cls, name)])
        else:
            fields[name] = strategy
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))


FLOATS = st.floats(allow_nan=True, allow_infinity=True)


def float_strategy(cls: type[BaseModel], fixed: dict[str, Any] | None = None) -> Any:
    """Instances of `cls` with any float (NaN, infinities, -0.0 included) in every float
    field without bounds, nested models and free-form dicts included."""
    fixed = fixed or {}
    example = full(cls)
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        annotation = _strip_optional(info.annotation)
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if name in fixed:
            fields[name] = st.just(fixed[name])
        elif annotation is float and not info.metadata:
            fields[name] = FLOATS
        elif origin is dict and args[1] is Any:
            fields[name] = st.dictionaries(TEXT, FLOATS, max_size=3)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields[name] = float_strategy(annotation)
        elif origin is list and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            fields[name] = st.lists(float_strategy(args[0]), min_size=1, max_size=2,
                                    unique_by=_name_of)  # fmt: skip
        else:
            fields[name] = st.just(getattr(example, name))
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))
