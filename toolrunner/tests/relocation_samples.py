"""Tool functions for the relocation rule tests: ones that travel as JSON and ones that cannot."""
from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import typing
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict, Union

if typing.TYPE_CHECKING:
    from google.adk.tools.tool_context import ToolContext

UserId = NewType("UserId", str)


class Forecast(TypedDict):
    city: str
    temps: list[float]
    note: Optional[str]  # noqa: UP045 - typing.Optional, the spelling relocation must accept too


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


class BadKeys(TypedDict):
    when: datetime.date


# --- accepted --------------------------------------------------------------------------------------

def unannotated(a, b=2):
    """No annotations: any JSON value."""
    return [a, b]


def scalars(s: str, i: int, f: float, b: bool, n: None = None) -> str:
    return f"{s}{i}{f}{b}{n}"


def containers(items: list[dict[str, int]], by_name: dict[str, list[str]], plain: list, raw: dict) -> dict:
    return {}


# Each spelling of an optional on purpose: Optional[T], T | None, Union[..., None].
def optionals(a: Optional[int], b: int | None = None, c: Union[str, int, None] = None) -> Optional[str]:  # noqa: UP007, UP045
    return None


def literals(unit: Literal["C", "F"], level: Literal[1, 2, None] = None) -> Literal["ok"]:
    return "ok"


def typed_dict(forecast: Forecast, user: UserId, note: Annotated[str, "a note"] = "") -> Forecast:
    return forecast


def anything(value: Any, **options: int) -> Any:
    return value


def with_context(city: str, tool_context: ToolContext = None) -> str:
    """ADK's context, with a default, under a TYPE_CHECKING-only import."""
    return city


async def asynchronous(city: str) -> dict:
    """An async tool."""
    return {"city": city}


def decorated_inner(city: str) -> str:
    return city


def logged(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)
    return wrapper


@logged
def decorated(city: str) -> str:
    """Wrapped by a functools.wraps decorator: relocated as the module's attribute."""
    return city


# --- refused -------------------------------------------------------------------------------------

def needs_context(city: str, tool_context: ToolContext) -> str:
    return city


def live(prompt: str, input_stream=None) -> str:
    return prompt


def positional_only(a: int, /, b: int) -> int:
    return a + b


def star_args(*values: int) -> int:
    return sum(values)


def a_tuple(pair: tuple[int, int]) -> int:
    return pair[0]


def a_set(tags: set[str]) -> int:
    return len(tags)


def some_bytes(data: bytes) -> int:
    return len(data)


def a_date(day: datetime.date) -> str:
    return str(day)


def an_enum(colour: Colour) -> str:
    return colour.value


def a_dataclass(point: Point) -> int:
    return point.x


def int_keys(counts: dict[int, str]) -> int:
    return len(counts)


def bad_typed_dict(value: BadKeys) -> None:
    return None


def returns_tuple(a: int) -> tuple[int, int]:
    return a, a


def unresolvable(value: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821 - the point of the test
    return None


def generator(n: int):
    yield from range(n)


async def async_generator(n: int):
    for i in range(n):
        yield i


def make_closure():
    secret = "in the agent"

    def closure(a: int) -> str:
        return f"{secret} {a}"
    return closure


def original_name(a: int) -> int:
    return a


shadowed = original_name  # module.shadowed is original_name, whose __name__ is not "shadowed"


def original_name(a: int) -> int:  # type: ignore[no-redef]  # rebinding the name is the point
    return -a


class Greeter:
    def greet(self, name: str) -> str:
        return f"hello {name}"

    @staticmethod
    def static(name: str) -> str:
        return name


class CallableObject:
    def __call__(self, a: int) -> int:
        return a


first_original = shadowed
lambda_tool = lambda a: a  # noqa: E731 - the point of the test
closure_tool = make_closure()
bound_method = Greeter().greet
partial_tool = functools.partial(scalars, "s")
callable_object = CallableObject()
