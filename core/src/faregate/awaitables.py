"""Calling what may or may not be a coroutine: a hook's result, a plugin object's method."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def await_me_maybe(value: T | Awaitable[T] | Callable[[], T | Awaitable[T]]) -> T:
    """Call ``value`` if callable, then await it if awaitable (datasette's convention)."""
    if callable(value):
        value = value()
    if inspect.isawaitable(value):
        value = await value
    return value
