"""An interactive chat with durable memory per user (``tiered-memory chat``).

:class:`ChatSession` handles one line at a time - a message for the model or
a command - so it is easy to drive from tests and other front ends.

Commands::

    /budget            tokens per section of the last prompt, and the caps
    /core              core memory (active facts) and their history
    /recalls           what the last recall brought back, with the gate's reason
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

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.context import ContextWindow
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.turns import message_text

__all__ = ["HELP", "ChatSession"]

HELP = """commands:
  /budget           tokens per section of the last prompt, and the caps
  /core             core memory and its history
  /recalls          what the last recall brought back, with the gate's reason
  /forget SUBJECT   forget one core fact;  /forget all  forget everything about you
  /help             this list
  /quit             leave"""


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

    def handle(self, line: str) -> str:
        """Answer one line of input."""
        line = line.strip()
        if not line:
            return ""
        if line.startswith("/"):
            return self._command(line)
        self.memory.add_messages([HumanMessage(line)])
        context = self.memory.build_context()
        self.last_context = context
        if self.model is None:
            reply = (
                f"(no model: the prompt would be {context.total_tokens} tokens; "
                f"gate: {context.gate.reason if context.gate else 'n/a'})"
            )
        else:
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

    def _core(self) -> str:
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
        if not context.recalled:
            lines.append("  (nothing recalled)")
        return "\n".join(lines)

    def _forget(self, arg: str) -> str:
        if not arg:
            return "usage: /forget SUBJECT  or  /forget all"
        if arg == "all":
            self.memory.forget_user()
            return f"forgot everything about {self.memory.user_id}"
        removed = self.memory.forget_fact(arg)
        if not removed:
            return f"no core fact about {arg!r}"
        return f"forgot {len(removed)} version(s) of {arg!r}"
