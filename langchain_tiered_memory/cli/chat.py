"""An interactive chat with durable memory per user (``tiered-memory chat``).

:class:`ChatSession` handles one line at a time - a message for the model or
a command - so it is easy to drive from tests and other front ends.

Commands::

    /budget            tokens per section of the last prompt, and the caps
    /context           the last prompt as sent: every message, its section and tokens
    /core              core memory (active facts) and their history
    /recalls           what the last recall brought back, with the gate's reason
    /forget WORDS      forget what was said about WORDS, in every tier
    /forget SUBJECT    forget one core fact (every version)
    /forget all        forget everything about this user, in every tier and file
    /help              this list
    /quit              leave

Example:
    >>> import tempfile
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_tiered_memory.store import MemoryStore
    >>> store = MemoryStore(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16))
    >>> session = ChatSession(store.memory("ana", "chat", context_window=4096), model=None)
    >>> "no model" in session.handle("I'm allergic to peanuts.")
    True
    >>> "allergic to peanuts" in session.handle("/core")
    True
    >>> store.close()
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langchain_tiered_memory.budget.context import ContextWindow
from langchain_tiered_memory.integrations.forgetting import forget_named
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.values.turns import message_text

__all__ = ["HELP", "ChatSession", "section_of"]

HELP = """commands:
  /budget           tokens per section of the last prompt, and the caps
  /context          the last prompt as sent: every message, its section and tokens
  /core             core memory and its history
  /recalls          what the last recall brought back, with the gate's reason
  /forget WORDS     forget what you said about WORDS (or one fact: /forget SUBJECT)
  /forget all       forget everything about you
  /help             this list
  /quit             leave"""


def section_of(message: BaseMessage, memory: TieredMemory) -> str:
    """Which budget section a message of an assembled prompt belongs to.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> m = TieredMemory(context_window=1024, system_prompt="Be brief.")
        >>> section_of(SystemMessage("Be brief."), m), section_of(HumanMessage("hi"), m)
        ('system prompt', 'buffer: recent turns')
    """
    from langchain_tiered_memory.budget.context import CORE_HEADER, RECALL_HEADER, split_turn_memory
    from langchain_tiered_memory.budget.markup import SUMMARY_HEADER

    if isinstance(message, SystemMessage):
        text = message_text(message)
        if text.startswith(CORE_HEADER):
            return "core memory"
        if text.startswith(RECALL_HEADER):
            return "recall"
        if text.startswith(SUMMARY_HEADER.split("{", 1)[0]):
            return "buffer: running summary"
        if text == memory.system_prompt:
            return "system prompt"
        return "system"
    if isinstance(message, HumanMessage) and any(split_turn_memory(message_text(message))[:2]):
        return "buffer: newest turn, opened by this turn's memory (core, recall)"
    return "buffer: recent turns"


class ChatSession:
    """One user's chat: each line is a message or a ``/command``.

    Args:
        memory: The user's thread memory.
        model: A chat model, or ``None`` to only show what would be sent.
    """

    def __init__(self, memory: TieredMemory, model: Any = None) -> None:
        self.memory = memory
        self.model = model
        self.last_context: ContextWindow | None = None
        self.done = False

    @property
    def extractor_name(self) -> str:
        """Who writes this chat's facts: the chat model (batched off the turn) or the rules."""
        extractor = self.memory.model_extractor
        if extractor is not None:
            every = self.memory.extract_every
            return f"the model ({type(extractor.model).__name__}, every {every} turns)"
        kind = type(self.memory.writer.extractor).__name__
        names = {
            "LinkedRulesExtractor": "the rules+links",
            "RuleBasedExtractor": "the rules",
            "LearnedExtractor": "the learned extractor",
        }
        return names.get(kind, kind)

    def close(self, timeout: float | None = 120.0) -> bool:
        """Extract what is still pending (the model's batch), waiting at most ``timeout``
        seconds; False if it did not finish (the turns stay pending in the store and are
        extracted the next time this thread is opened)."""
        return self.memory.flush_extraction(timeout)

    def handle(self, line: str) -> str:
        """Answer one line of input."""
        line = line.strip()
        if not line:
            return ""
        if line.startswith("/"):
            return self._command(line)
        before = self.memory.last_forget
        self.memory.add_messages([HumanMessage(line)])
        context = self.memory.build_context()
        self.last_context = context
        if self.model is None:  # a note for the person, not a turn of the conversation
            note = (
                f"(no model: the prompt would be {context.total_tokens} tokens; "
                f"gate: {context.gate.reason if context.gate else 'n/a'})"
            )
            report = self.memory.last_forget
            if report is not None and report is not before:  # the line asked to forget
                done = f"forgot {report.summary()}" if report.found else "nothing matched"
                note = f"(forget request carried out: {done})\n{note}"
            return note
        reply = message_text(self.model.invoke(context.messages)).strip() or "(empty reply)"
        self.memory.add_messages([AIMessage(reply)])
        return reply

    def _command(self, line: str) -> str:
        command, _, arg = line.partition(" ")
        arg = arg.strip()
        if command in ("/quit", "/exit"):
            self.done = True
            return "bye"
        if command == "/help":
            return HELP
        if command == "/budget":
            return self._budget()
        if command == "/context":
            return self._context()
        if command == "/core":
            return self._core()
        if command == "/recalls":
            return self._recalls()
        if command == "/forget":
            return self._forget(arg)
        return f"unknown command {command!r}\n{HELP}"

    def _budget(self) -> str:
        caps = self.memory.budget.caps
        lines = [
            f"window {self.memory.budget.context_window} tokens, input budget "
            f"{self.memory.budget.input_budget}"
        ]
        usage = self.last_context.usage if self.last_context else {}
        for section, cap in caps.items():
            used = usage.get(section, "-")
            lines.append(f"  {section:<7} {used!s:>6} / {cap}")
        if self.last_context:
            lines.append(f"  total   {self.last_context.total_tokens:>6}")
        return "\n".join(lines)

    def _context(self) -> str:
        """The assembled prompt: each message with its section and size, then the totals.

        Before the first message it is the prompt the memory would build now.
        """
        context = self.last_context
        note = "last prompt"
        if context is None:
            context = self.memory.build_context()
            note = "prompt the memory would build now (nothing sent yet)"
        counter = self.memory.counter
        budget = self.memory.budget
        usage = ", ".join(
            f"{section} {context.usage.get(section, 0)}/{cap}"
            for section, cap in budget.caps.items()
            if section != "output"
        )
        lines = [
            f"{note}: {len(context.messages)} messages, {context.total_tokens} of "
            f"{context.input_budget} input tokens (window {budget.context_window}, "
            f"{budget.caps['output']} kept for the reply)",
            f"sections: {usage}",
        ]
        for message in context.messages:
            tokens = counter.count_messages([message]) - counter.count_messages([])
            lines.append(
                f"--- {section_of(message, self.memory)} · {message.type} · {tokens} tokens"
            )
            lines.append(message_text(message))
        return "\n".join(lines)

    def _core(self) -> str:
        self.memory.flush_extraction()  # the model's pending batch first: /core shows all
        active = self.memory.core.render() or "(empty)"
        old = [f for f in self.memory.core.history() if f.status != "active"]
        lines = [active]
        if old:
            lines.append("history:")
            lines += [f"  {f.subject}: {f.content} [{f.status}, {f.reason or ''}]" for f in old]
        return "\n".join(lines)

    def _recalls(self) -> str:
        context = self.last_context
        if context is None:
            return "nothing yet"
        gate = context.gate
        lines = [
            f"gate: {'recall' if gate and gate.recall else 'no recall'} - "
            f"{gate.reason if gate else 'n/a'}"
        ]
        for item in context.recalled:
            score = f"{item.score:.3f}" if item.score is not None else "-"
            lines.append(f"  [{score}] ({item.source}) {item.text[:100]}")
        for item in context.repeats:
            lines.append(
                f"  (already in the prompt: core memory, summary or turns) {item.text[:100]}"
            )
        if not context.recalled and context.repeats:
            lines.append(
                f"  (nothing new recalled: the {len(context.repeats)} record(s) found are "
                "already in the prompt)"
            )
        elif not context.recalled:
            lines.append("  (nothing recalled)")
        return "\n".join(lines)

    def _forget(self, arg: str) -> str:
        """``/forget all``, ``/forget SUBJECT`` (a fact's subject: every version), or
        ``/forget WORDS`` (what was said about them, in every tier: see
        :meth:`~langchain_tiered_memory.memory.TieredMemory.forget_about`)."""
        if not arg:
            return "usage: /forget WORDS  or  /forget SUBJECT  or  /forget all"
        if arg == "all":
            self.memory.forget_user()
            return f"forgot everything about {self.memory.user_id}"
        try:
            return forget_named(self.memory, arg)
        except ValueError as exc:
            return str(exc)
