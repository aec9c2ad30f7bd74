"""Whose memory a run uses: one rule for the graph, the middleware, the tools and the chains.

A LangChain or LangGraph run can name its user in several places. Every
adapter of this package reads them with :func:`resolve_identity`, so they all
agree on one rule:

* **Where the user id comes from**: the runtime context's ``user_id``
  (``create_agent(..., context_schema=...)``, ``graph.invoke(...,
  context={"user_id": ...})``), ``config["configurable"]["user_id"]``, the
  user authenticated by the LangGraph server
  (``config["configurable"]["langgraph_auth_user_id"]``, set when the
  deployment has auth), and - for the tools - a ``user_id=`` bound when the
  tool was made.
* **They must agree**: two sources naming different users is an error
  (:class:`IdentityError`), never "one silently wins".
* **A missing or empty user id is an error**, unless the application opted
  into a shared default with ``default_user_id=...`` (then, and only then,
  runs that name no user share that user's memory).
* **Ids are strings**: ``0`` or ``False`` is a :class:`TypeError`, not the
  users ``"0"`` and ``"False"``.
* **The thread id** comes from ``config["configurable"]["thread_id"]`` (the
  key LangGraph checkpoints by) or the runtime context's ``thread_id``; when
  both are given they must agree. A run without one uses the thread
  :data:`DEFAULT_THREAD` of its user.

Example:
    >>> resolve_identity({"configurable": {"user_id": "ana", "thread_id": "t1"}})
    Identity(user_id='ana', thread_id='t1')
    >>> resolve_identity({"configurable": {"thread_id": "t1"}}, {"user_id": "ana"}).user_id
    'ana'
    >>> resolve_identity({}, default_user_id="demo")
    Identity(user_id='demo', thread_id='default')
    >>> resolve_identity({"configurable": {"user_id": "ana"}}, {"user_id": "bob"})
    Traceback (most recent call last):
    ...
    langchain_tiered_memory.integrations.identity.IdentityError: The run names different users: ...
    >>> resolve_identity({"configurable": {"user_id": 0}})
    Traceback (most recent call last):
    ...
    TypeError: config['configurable']['user_id'] must be a string, got int 0. ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.ids import check_id

__all__ = [
    "DEFAULT_THREAD",
    "Identity",
    "IdentityError",
    "check_default_user",
    "check_run_user",
    "current_context",
    "given_id",
    "resolve_identity",
]

#: The thread of a run that names none.
DEFAULT_THREAD = "default"

_USER = "user_id"
_THREAD = "thread_id"
_AUTH_USER = "langgraph_auth_user_id"
_MISSING: Any = object()

_HOW_TO = (
    "Pass config={'configurable': {'user_id': '<user id>', 'thread_id': '<thread id>'}} "
    "(or, with create_agent / a LangGraph context schema, context={'user_id': '<user id>'}); "
    "or, if every run without a user should share one memory, opt in with "
    "default_user_id='<user id>'."
)


class IdentityError(ValueError):
    """A run names no user, an empty one, or two different ones."""


@dataclass(frozen=True)
class Identity:
    """The user and thread a run's memory belongs to."""

    user_id: str
    thread_id: str


def given_id(value: Any, name: str) -> str | None:
    """``value`` if it is a valid id (:func:`~langchain_tiered_memory.ids.check_id`);
    ``None`` if missing or empty.

    Raises:
        TypeError: if ``value`` is given but is not a string (``0``, ``False``,
            a UUID object...): ids are never converted silently.
        IdentityError: for a string no store can hold (a NUL, a lone surrogate, ...).

    Example:
        >>> given_id("ana", "user_id"), given_id("  ", "user_id"), given_id(None, "user_id")
        ('ana', None, None)
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a string, got {type(value).__name__} {value!r}. "
            "Pass str(...) yourself if that is what you mean."
        )
    if not value.strip():
        return None
    try:
        return check_id(value, name)
    except ValueError as exc:
        raise IdentityError(str(exc)) from exc


def _lookup(holder: Any, key: str) -> Any:
    if holder is None:
        return None
    if isinstance(holder, Mapping):
        return holder.get(key)
    return getattr(holder, key, None)


def current_context() -> Any:
    """The LangGraph runtime context of the current run (``None`` outside a graph run).

    Example:
        >>> current_context() is None  # not inside a graph
        True
    """
    try:
        from langgraph.runtime import get_runtime
    except ImportError:  # pragma: no cover - langgraph is a dependency
        return None
    try:
        runtime = get_runtime()
    except (RuntimeError, KeyError, LookupError):
        return None
    return getattr(runtime, "context", None)


def resolve_identity(
    config: Mapping[str, Any] | None = None,
    context: Any = _MISSING,
    *,
    bound_user_id: str | None = None,
    default_user_id: str | None = None,
) -> Identity:
    """The :class:`Identity` of a run, by the rule in the module docstring.

    Args:
        config: The run's ``RunnableConfig`` (``None``: no config).
        context: The run's runtime context (a mapping or an object with
            ``user_id`` / ``thread_id`` attributes). Omitted: the current
            LangGraph runtime's context, if running inside a graph.
        bound_user_id: A user the caller is bound to (a tool made with
            ``user_id=``); it counts as one more source that must agree.
        default_user_id: The user of runs that name none (opt-in; without it
            such a run is an error).

    Raises:
        IdentityError: no user id (and no default), or sources disagree.
        TypeError: an id that is not a string.
    """
    if context is _MISSING:
        context = current_context()
    configurable = (config or {}).get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise TypeError(
            f"config['configurable'] must be a mapping, got {type(configurable).__name__}"
        )
    auth_user = configurable.get(_AUTH_USER)
    users = {
        "the runtime context's user_id": given_id(
            _lookup(context, _USER), "the runtime context's user_id"
        ),
        "config['configurable']['user_id']": given_id(
            configurable.get(_USER), "config['configurable']['user_id']"
        ),
        "the authenticated user (langgraph_auth_user_id)": (
            auth_user if isinstance(auth_user, str) and auth_user.strip() else None
        ),
        "the user_id this was bound to": given_id(bound_user_id, "user_id"),
    }
    user = _agreed(users, "users")
    if user is None:
        default = given_id(default_user_id, "default_user_id")
        if default is None:
            empty = [
                where
                for where, raw in (
                    ("the runtime context's user_id", _lookup(context, _USER)),
                    ("config['configurable']['user_id']", configurable.get(_USER)),
                )
                if isinstance(raw, str)
            ]
            detail = f" ({' and '.join(empty)} is empty)" if empty else ""
            raise IdentityError(
                f"No user id for this run{detail}: the user id must be a non-empty string. "
                + _HOW_TO
            )
        user = default
    threads = {
        "config['configurable']['thread_id']": given_id(
            configurable.get(_THREAD), "config['configurable']['thread_id']"
        ),
        "the runtime context's thread_id": given_id(
            _lookup(context, _THREAD), "the runtime context's thread_id"
        ),
    }
    thread = _agreed(threads, "threads")
    return Identity(user, thread or DEFAULT_THREAD)


def current_config() -> Mapping[str, Any] | None:
    """The ``RunnableConfig`` of the LangChain or LangGraph run this code runs in (``None``
    outside one).

    Example:
        >>> current_config() is None  # not inside a run
        True
    """
    try:
        from langgraph.config import get_config
    except ImportError:  # pragma: no cover - langgraph is a dependency
        return None
    try:
        return get_config()
    except RuntimeError:
        return None


def check_run_user(user_id: str) -> None:
    """Refuse to use ``user_id``'s memory inside a run that names another user.

    For adapters bound to one user's memory (a chat history): inside a
    LangGraph or LangChain run, the run's runtime context, its
    ``config["configurable"]`` and its authenticated user must name
    ``user_id`` or nobody - the rule of :func:`resolve_identity`, with
    ``user_id`` as one more source. Outside a run there is nothing to check.

    Raises:
        IdentityError: when the run names another user.

    Example:
        >>> check_run_user("ana")  # outside any run: nothing to compare
    """
    config, context = current_config(), current_context()
    if config is None and context is None:
        return
    resolve_identity(config, context, bound_user_id=user_id, default_user_id=user_id)


def _agreed(found: Mapping[str, str | None], what: str) -> str | None:
    given = {where: value for where, value in found.items() if value is not None}
    if len(set(given.values())) > 1:
        names = ", ".join(f"{where}={value!r}" for where, value in given.items())
        raise IdentityError(f"The run names different {what}: {names}. Make them agree.")
    return next(iter(given.values()), None)


def check_default_user(default_user_id: str | None) -> str | None:
    """Validate a ``default_user_id=`` argument at construction.

    Raises:
        TypeError: if it is not a string.
        ValueError: if it is an empty string.

    Example:
        >>> check_default_user("demo"), check_default_user(None)
        ('demo', None)
    """
    if default_user_id is None:
        return None
    if given_id(default_user_id, "default_user_id") is None:
        raise ValueError("default_user_id must be a non-empty string (or None for no default)")
    return default_user_id
