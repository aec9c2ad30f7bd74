"""The token budget: a context window split into sections.

Sections and default shares of the window::

    system 10%   the pinned system prompt (and tool schemas)
    core   10%   core memory: key facts about the user and the task
    buffer 50%   the running summary and the most recent turns, verbatim
    recall 15%   what retrieval brought back for this turn
    output 15%   reserved for the model's reply; never lent

A section using less than its cap lends the spare tokens to the others, in
``lend_order`` (default: buffer first, then recall, then core). ``output`` is
always reserved, so an assembled prompt never exceeds
``context_window - output``.

Example:
    >>> budget = TokenBudget(context_window=4096)
    >>> budget.caps["buffer"], budget.caps["output"], budget.input_budget
    (2048, 616, 3480)
    >>> TokenBudget.for_model("gpt-4").context_window
    8192
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_RATIOS",
    "MODEL_CONTEXT_WINDOWS",
    "SECTIONS",
    "Section",
    "TokenBudget",
    "canonical_model_name",
    "chat_model_name",
    "context_window_for_model",
    "known_model_names",
    "split_model_name",
]

Section = Literal["system", "core", "buffer", "recall", "output"]
SECTIONS: tuple[str, ...] = ("system", "core", "buffer", "recall", "output")
INPUT_SECTIONS: tuple[str, ...] = ("system", "core", "buffer", "recall")
DEFAULT_RATIOS: Mapping[str, float] = {
    "system": 0.10,
    "core": 0.10,
    "buffer": 0.50,
    "recall": 0.15,
    "output": 0.15,
}

#: Context windows (input + output tokens) of well-known models. A name may
#: carry a version suffix (``gpt-4o-mini-2024-07-18``, ``claude-3-5-sonnet-20241022``,
#: ``gpt-4-turbo-preview``, ``...-latest``); anything else is an unknown name.
MODEL_CONTEXT_WINDOWS: Mapping[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5.1": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-opus-4": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-haiku-4": 200_000,
    "claude-haiku-4-5": 200_000,
    "smollm2-135m-instruct": 8_192,
}

_TOLERANCE = 1e-6


#: A version suffix after a known name: dates, ``-0613``, ``-latest``, ``-preview``.
_VERSION = re.compile(r"(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview|exp))+")


def known_model_names() -> list[str]:
    """Model names this package can size or count without help, sorted.

    The models of :data:`MODEL_CONTEXT_WINDOWS` plus those tiktoken knows by name.

    Example:
        >>> "gpt-4o-mini" in known_model_names()
        True
    """
    names = set(MODEL_CONTEXT_WINDOWS)
    try:
        import tiktoken.model

        names.update(tiktoken.model.MODEL_TO_ENCODING)
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        pass
    return sorted(names)


def split_model_name(model: str) -> tuple[str, str | None]:
    """``(name, base)``: the lower-cased name without provider, and the known name it
    is a version of (``None`` if unknown).

    Example:
        >>> split_model_name("openai:GPT-4o-mini")
        ('gpt-4o-mini', 'gpt-4o-mini')
    """
    name = model.split(":", 1)[1] if ":" in model and not model.startswith("ft:") else model
    name = name.strip().lower()
    known = known_model_names()
    if name in known:
        return name, name
    for base in sorted(known, key=len, reverse=True):
        if name.startswith(base) and _VERSION.fullmatch(name[len(base) :]):
            return name, base
    return name, None


def _unknown(model: str, name: str, what: str) -> ValueError:
    close = difflib.get_close_matches(name, known_model_names(), n=1, cutoff=0.75)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Unknown model name {model!r}.{hint} (Known: the names in MODEL_CONTEXT_WINDOWS "
        f"and tiktoken's, with an optional version suffix.) For another model, {what}"
    )


def canonical_model_name(model: str) -> str:
    """The lower-case name of a known model, without its ``provider:`` prefix.

    Matching ignores case (``"GPT-4o-mini"``), and accepts a version suffix
    after a known name (``"gpt-4o-mini-2024-07-18"``). A name that is neither
    is an error naming the closest known one, so a typo never silently gets
    some other model's window or tokenizer.

    Raises:
        ValueError: for an unknown or misspelt name.

    Example:
        >>> canonical_model_name("openai:GPT-4o-mini")
        'gpt-4o-mini'
        >>> canonical_model_name("gpt-4o-mni")
        Traceback (most recent call last):
        ...
        ValueError: Unknown model name 'gpt-4o-mni'. Did you mean 'gpt-4o-mini'? ...
    """
    if not isinstance(model, str):
        raise TypeError(f"a model name must be a string, got {type(model).__name__}")
    name, base = split_model_name(model)
    if base is None:
        raise _unknown(
            model, name, "pass context_window=<tokens> and token_counter=<counter> instead."
        )
    return name


def context_window_for_model(model: Any) -> int:
    """A model's context window: from :data:`MODEL_CONTEXT_WINDOWS`, or a chat model's profile.

    Accepts ``init_chat_model`` style names (``"openai:gpt-4o-mini"``), any
    case, with a version suffix; or a LangChain chat model, whose
    ``profile["max_input_tokens"]`` (LangChain's model profiles) is used, or
    else its model name.

    Raises:
        ValueError: for an unknown or misspelt model, naming the closest known
            name and the fix.

    Example:
        >>> context_window_for_model("openai:gpt-4o-mini-2024-07-18")
        128000
        >>> context_window_for_model("GPT-4")
        8192
    """
    if not isinstance(model, str):
        profile = getattr(model, "profile", None) or {}
        window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
        if isinstance(window, int) and window > 0:
            return window
        name = chat_model_name(model)
        if name is None:
            raise ValueError(
                f"Cannot tell the context window of {type(model).__name__}: it has no model "
                "profile and no model name. Pass context_window=<tokens>."
            )
        model = name
    name, base = split_model_name(model)
    if base is None:
        raise _unknown(model, name, "pass context_window=<tokens> explicitly.")
    for known in sorted(MODEL_CONTEXT_WINDOWS, key=len, reverse=True):
        if name == known or (name.startswith(known) and _VERSION.fullmatch(name[len(known) :])):
            return MODEL_CONTEXT_WINDOWS[known]
    raise ValueError(
        f"Unknown context window for model {model!r}. Pass context_window=<tokens> "
        "explicitly (e.g. TokenBudget(context_window=8192))."
    )


def chat_model_name(model: Any) -> str | None:
    """The model name a LangChain chat model was made for (``model_name``/``model``), if any.

    Example:
        >>> chat_model_name(object()) is None
        True
    """
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value.strip():
            return value
    return None


@dataclass(frozen=True)
class TokenBudget:
    """Per-section token caps for one context window.

    Args:
        context_window: The model's whole window (input + output), in tokens.
        ratios: Share of the window per section; must be non-negative, name
            every section and sum to 1. Missing keys take the defaults only if
            the result still sums to 1.
        lend_order: Which sections receive spare tokens first.
        min_output_tokens: Lower bound for the reserved ``output`` section.

    Raises:
        ValueError: on negative ratios, ratios that do not sum to 1, unknown
            section names, or a window too small to hold anything.

    Example:
        >>> TokenBudget(context_window=10_000, ratios={"system": 0.1, "core": 0.1,
        ...     "buffer": 0.6, "recall": 0.05, "output": 0.15}).caps["buffer"]
        6000
    """

    context_window: int
    ratios: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_RATIOS))
    lend_order: tuple[Section, ...] = ("buffer", "recall", "core")
    min_output_tokens: int = 16

    def __post_init__(self) -> None:
        if not isinstance(self.context_window, int) or isinstance(self.context_window, bool):
            raise ValueError(
                f"context_window must be an int number of tokens, got {self.context_window!r}"
            )
        if self.context_window < 256:
            raise ValueError(
                f"context_window={self.context_window} is too small to hold a system "
                "prompt, memory and a reply; use at least 256 tokens."
            )
        unknown = set(self.ratios) - set(SECTIONS)
        if unknown:
            raise ValueError(
                f"Unknown budget section(s) {sorted(unknown)}; the sections are {list(SECTIONS)}."
            )
        ratios = dict(DEFAULT_RATIOS)
        ratios.update(self.ratios)
        for name, value in ratios.items():
            if not isinstance(value, int | float) or math.isnan(value) or value < 0:
                raise ValueError(f"Budget ratio for {name!r} must be a number >= 0, got {value!r}.")
        total = sum(ratios.values())
        if abs(total - 1.0) > _TOLERANCE:
            detail = ", ".join(f"{k}={v:g}" for k, v in ratios.items())
            raise ValueError(
                f"Budget ratios must sum to 1, but {detail} sum to {total:g}. "
                f"Adjust them so they add up to 1 (e.g. lower 'buffer' by "
                f"{total - 1:+g})."
            )
        if ratios["output"] <= 0:
            raise ValueError("The 'output' ratio must be > 0: the model needs room for its reply.")
        if ratios["buffer"] <= 0:
            raise ValueError(
                "The 'buffer' ratio must be > 0: the latest turn has to fit somewhere."
            )
        bad_order = set(self.lend_order) - set(INPUT_SECTIONS)
        if bad_order:
            raise ValueError(
                f"lend_order may only name {list(INPUT_SECTIONS)}, got {sorted(bad_order)}."
            )
        object.__setattr__(self, "ratios", ratios)
        if self.caps["output"] < self.min_output_tokens:
            raise ValueError(
                f"The output section holds {self.caps['output']} tokens, below "
                f"min_output_tokens={self.min_output_tokens}; raise the 'output' "
                "ratio or the context window."
            )

    @classmethod
    def for_model(
        cls,
        model: Any,
        *,
        context_window: int | None = None,
        ratios: Mapping[str, float] | None = None,
    ) -> TokenBudget:
        """Build a budget from a model's known window (or an explicit one).

        ``model`` is a model name or a LangChain chat model (see
        :func:`context_window_for_model`).

        Example:
            >>> TokenBudget.for_model("gpt-4o-mini").caps["recall"]
            19200
        """
        window = context_window or context_window_for_model(model)
        return cls(context_window=window, ratios=dict(ratios or DEFAULT_RATIOS))

    @property
    def caps(self) -> dict[str, int]:
        """Tokens per section (floored; ``output`` takes the rounding remainder)."""
        caps = {name: int(self.context_window * self.ratios[name]) for name in INPUT_SECTIONS}
        caps["output"] = self.context_window - sum(caps.values())
        return caps

    @property
    def input_budget(self) -> int:
        """Most tokens an assembled prompt may use: ``context_window - output``."""
        return self.context_window - self.caps["output"]

    def allocate(self, needs: Mapping[str, int]) -> dict[str, int]:
        """Split the input budget given what each section would like to use.

        Each section first gets ``min(need, cap)``; the tokens left over
        (spare from sections under their cap) go to sections that want more,
        in ``lend_order``. ``system`` is never lent to (it is pinned and
        checked separately); ``output`` is never lent from.

        Args:
            needs: Desired tokens per input section (missing means 0).

        Returns:
            Allowed tokens per input section; they sum to at most
            :attr:`input_budget`.

        Example:
            >>> b = TokenBudget(context_window=1000)
            >>> b.allocate({"system": 20, "core": 0, "buffer": 900, "recall": 30})
            {'system': 20, 'core': 0, 'buffer': 800, 'recall': 30}
        """
        caps = self.caps
        granted: dict[str, int] = {
            s: min(max(0, int(needs.get(s, 0))), caps[s]) for s in INPUT_SECTIONS
        }
        spare = self.input_budget - sum(granted.values())
        for section in self.lend_order:
            if spare <= 0:
                break
            extra = min(spare, max(0, int(needs.get(section, 0))) - granted[section])
            if extra > 0:
                granted[section] += extra
                spare -= extra
        return granted

    def describe(self) -> str:
        """One line per section: ratio and cap.

        Example:
            >>> print(TokenBudget(context_window=1000).describe().splitlines()[0])
            system  10.0%    100 tokens
        """
        caps = self.caps
        return "\n".join(
            f"{name:<7}{self.ratios[name] * 100:5.1f}% {caps[name]:>6} tokens" for name in SECTIONS
        )
