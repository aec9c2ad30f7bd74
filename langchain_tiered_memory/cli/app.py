"""The ``tiered-memory`` command line (``tiered-memory bench`` comes from :mod:`.plugins`).

Example (shell)::

    tiered-memory chat --user ana
    tiered-memory inspect --user ana --json
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from langchain_tiered_memory.cli.common import (
    USER_ERROR_EXIT,
    USER_ERRORS,
    console,
    extractor_choice,
    extractor_for_model,
    memory_location,
    one_line,
    progress_bars,
    require_module,
    write_json,
)
from langchain_tiered_memory.cli.output import print_wrapped
from langchain_tiered_memory.cli.plugins import listing_entry, load_plugin, plugin_names
from langchain_tiered_memory.version import __version__

__all__ = ["USER_ERROR_EXIT", "app", "one_line", "write_json"]


#: click's ``UsageError`` as typer raises it (typer 0.2x vendors its own click, whose
#: exceptions are not the ``click`` package's): an unknown option or command, a bad value.
USAGE_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)


class _Commands(TyperGroup):
    """The command group: user errors become one line and an exit code.

    Usage errors (an unknown option or command, a bad value) are one line too,
    pointing at the command's ``--help``, in place of click's framed box.
    Commands that other distributions add (``bench``) come from :mod:`.plugins`,
    imported only when they run.
    """

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        try:  # the group's own options: `tiered-memory --no-such-option`
            return super().make_context(info_name, args, parent, **extra)
        except USAGE_ERROR as exc:
            _usage_error(exc)

    def list_commands(self, ctx: Any) -> list[str]:
        own = super().list_commands(ctx)
        return own + [name for name in plugin_names() if name not in own]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return super().get_command(ctx, cmd_name) or listing_entry(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and args[0] in plugin_names():
            return args[0], load_plugin(args[0]), args[1:]
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except USAGE_ERROR as exc:  # a command's options, or a BadParameter it raised
            _usage_error(exc)
        except USER_ERRORS as exc:
            if ctx.params.get("debug") or os.environ.get("TIERED_MEMORY_DEBUG"):
                raise
            typer.echo(f"{one_line(exc)} (--debug shows the traceback)", err=True)
            raise typer.Exit(USER_ERROR_EXIT) from None


def _usage_error(exc: Any) -> NoReturn:
    """Report a usage error in one line (exit code :data:`USER_ERROR_EXIT`).

    ``tiered-memory`` without a command still shows the help.
    """
    if type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    where = exc.ctx.command_path if exc.ctx is not None else "tiered-memory"
    message = " ".join(exc.format_message().split())
    typer.echo(f"error: {message} (see {where} --help)", err=True)
    raise typer.Exit(USER_ERROR_EXIT) from None


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"tiered-memory {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="tiered-memory",
    help="Tiered memory for LangChain and LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    cls=_Commands,
)


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the full traceback of an error.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Tiered memory for LangChain and LangGraph agents."""
    logging.basicConfig(level=logging.INFO if verbose or debug else logging.WARNING)


@app.command()
def demo(
    context_window: Annotated[
        int, typer.Option(help="Window in tokens (small, so compression shows).")
    ] = 1024,
    model: Annotated[
        str,
        typer.Option(
            help="'local' (SmolLM2 offline, if installed), 'echo' (no LLM), 'none', or an "
            "init_chat_model string such as 'openai:gpt-4o-mini'."
        ),
    ] = "local",
    data_dir: Annotated[
        Path | None, typer.Option(help="Keep the demo's memory here (default: a temp dir).")
    ] = None,
) -> None:
    """Replay a scripted multi-session conversation and show the memory working."""
    from langchain_tiered_memory.cli.demo import run_demo
    from langchain_tiered_memory.models import resolve_chat_model

    try:
        chat_model = resolve_chat_model(model, what="--model")
    except ImportError as exc:
        print_wrapped(console, str(exc), style="yellow")
        print_wrapped(
            console,
            "(continuing without a model: the demo shows the context a model would receive)",
        )
        chat_model = None
    result = run_demo(
        console=console, context_window=context_window, model=chat_model, data_dir=data_dir
    )
    if result.max_prompt_tokens > result.input_budget:
        raise typer.Exit(code=1)


DataDir = Annotated[
    Path, typer.Option("--data-dir", help="Memory data directory (shared by chat and inspect).")
]
ExtractorOption = Annotated[
    str,
    typer.Option(
        "--extractor",
        help="Who writes the facts: 'model' (the chat model, batched off the turn, when it "
        "gives structured output; else 'rules+links'), 'auto' (the same, but 'rules+links' "
        "for the tiny 'local' model), or an offline extractor, no model call: 'rules+links' "
        "(the rules, with updates linked by meaning; the offline default), 'rules' or "
        "'learned'.",
    ),
]
StoreUrl = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="A postgresql:// URL: the memory lives in that database instead of --data-dir.",
    ),
]


@app.command()
def chat(
    user: Annotated[str, typer.Option(help="Whose memory.")] = "me",
    thread: Annotated[str, typer.Option(help="Conversation id.")] = "chat",
    data_dir: DataDir = Path(".tiered-memory"),
    store: StoreUrl = None,
    model: Annotated[
        str,
        typer.Option(
            help="'local' (SmolLM2, offline), 'echo' (no LLM), 'none', or an init_chat_model "
            "string."
        ),
    ] = "local",
    context_window: Annotated[int, typer.Option(help="Window in tokens.")] = 4096,
    embeddings: Annotated[
        str | None,
        typer.Option(help="Embedder: 'e5' (multilingual), 'minilm' or 'wordllama' (fast)."),
    ] = None,
    extractor: ExtractorOption = "auto",
) -> None:
    """Chat with durable memory; /help lists the commands."""
    import sys

    from langchain_tiered_memory.cli.chat import HELP, ChatSession
    from langchain_tiered_memory.ids import check_id
    from langchain_tiered_memory.models import resolve_chat_model
    from langchain_tiered_memory.storage.postgres.db import redact_url
    from langchain_tiered_memory.store import MemoryStore

    check_id(user, "--user")
    check_id(thread, "--thread")
    extractor = extractor_choice(extractor)
    location = memory_location(data_dir, store)
    try:
        chat_model = resolve_chat_model(model, what="--model")
    except ImportError as exc:
        console.print(f"[red]{escape(str(exc))}[/]\nFalling back to --model none.")
        chat_model = None
    writes = extractor_for_model(extractor, chat_model, model)
    with MemoryStore(location, embeddings=embeddings) as memory_store:
        memory = memory_store.memory(user, thread, context_window=context_window, extractor=writes)
        session = ChatSession(memory, model=chat_model)
        where = escape(redact_url(str(location)))
        console.print(
            f"memory of [bold]{escape(user)}[/] in {where}, facts written by "
            f"{escape(session.extractor_name)} - {escape(HELP.splitlines()[0])} /help"
        )
        interactive = sys.stdin.isatty()
        while not session.done:
            try:
                line = console.input("[bold green]you> [/]") if interactive else input()
            except EOFError:
                break
            answer = session.handle(line)
            if answer:
                console.print(answer, markup=False)
        session.close()


@app.command("inspect")
def inspect_command(
    user: Annotated[str, typer.Option(help="Whose memory.")] = "me",
    data_dir: DataDir = Path(".tiered-memory"),
    store: StoreUrl = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    limit: Annotated[int, typer.Option(help="Most records and audit events.")] = 200,
    embeddings: Annotated[
        str | None, typer.Option(help="The embedder the data directory was built with.")
    ] = None,
) -> None:
    """Show a user's records, core memory, summaries and audit log."""
    from langchain_tiered_memory.cli.inspect import inspect_user, render_inspection
    from langchain_tiered_memory.ids import check_id
    from langchain_tiered_memory.storage.postgres.db import redact_url
    from langchain_tiered_memory.store import MemoryStore

    location = memory_location(data_dir, store)
    if store is None and not data_dir.exists():
        raise typer.BadParameter(f"no data directory at {data_dir}", param_hint="--data-dir")
    with MemoryStore(location, embeddings=embeddings) as memory_store:
        users = memory_store.users()
        known_user = check_id(user, "--user") in users or memory_store.audit.events(user, limit=1)
        if not known_user:  # never seen (a forgotten user keeps the event of their forget)
            known = ", ".join(users[:10]) + (", ..." if len(users) > 10 else "")
            raise ValueError(
                f"no memory of user {user!r} in {redact_url(str(location))} "
                f"({'users there: ' + known if users else 'it holds no user yet'})"
            )
        data = inspect_user(memory_store, user, limit=limit)
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        render_inspection(data, console)


@app.command()
def mcp(
    user: Annotated[
        str | None, typer.Option(help="Serve this one user's memory (stdio, or HTTP for one user).")
    ] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(
            help='HTTP: a JSON file {"<bearer token>": "<user id>", ...}; each request is served '
            "as the user of its Authorization header."
        ),
    ] = None,
    transport: Annotated[str, typer.Option(help="'stdio' or 'http' (streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP: a loopback address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="HTTP: the port (the URL is http://HOST:PORT/mcp).")] = (
        8765
    ),
    data_dir: DataDir = Path(".tiered-memory"),
    store: StoreUrl = None,
    embeddings: Annotated[
        str | None,
        typer.Option(help="Embedder: 'minilm', 'e5', 'wordllama' or 'none' (keywords only)."),
    ] = None,
    recall_tokens: Annotated[int, typer.Option(help="Most tokens one recall returns.")] = 800,
) -> None:
    """Serve the memory over the Model Context Protocol (remember, recall, core facts, forget)."""
    from langchain_tiered_memory.integrations.mcp_server import build_mcp_server, load_tokens
    from langchain_tiered_memory.store import MemoryStore

    require_module("mcp", "mcp", "mcp")
    kind = transport.strip().lower()
    if kind not in ("stdio", "http"):
        raise typer.BadParameter("use 'stdio' or 'http'", param_hint="--transport")
    if (user is None) == (tokens is None):
        raise typer.BadParameter(
            "give --user (one user) or --tokens (HTTP: token -> user), exactly one",
            param_hint="--user / --tokens",
        )
    if tokens is not None and kind == "stdio":
        raise typer.BadParameter(
            "stdio has no request headers: serve one user with --user", param_hint="--tokens"
        )
    if user is not None and not user.strip():
        raise typer.BadParameter("a user id must be a non-empty string", param_hint="--user")
    mapping = load_tokens(tokens) if tokens is not None else None
    location = memory_location(data_dir, store)
    with MemoryStore(location, embeddings=embeddings) as memory_store:
        server = build_mcp_server(
            memory_store,
            user_id=user,
            tokens=mapping,
            host=host,
            port=port,
            recall_tokens=recall_tokens,
        )
        # stdout is the protocol's channel over stdio: nothing else may be printed there
        where = f"http://{host}:{port}/mcp" if kind == "http" else "stdio"
        typer.echo(f"tiered-memory MCP server on {where}", err=True)
        server.run("streamable-http" if kind == "http" else "stdio")


@app.command()
def migrate(
    data_dir: Annotated[Path, typer.Argument(help="The SQLite data directory to copy.")],
    url: Annotated[str, typer.Argument(help="The target database: postgresql://user:pw@host/db")],
    batch: Annotated[int, typer.Option(help="Rows per transaction.")] = 2000,
    sample: Annotated[int, typer.Option(help="Records and messages compared afterwards.")] = 200,
    out: Annotated[Path | None, typer.Option(help="Write the report as JSON here.")] = None,
) -> None:
    """Copy a data directory into Postgres (safe to re-run), then verify the copy."""
    location = memory_location(data_dir, url)
    if not (data_dir / "archive.sqlite").is_file():
        raise typer.BadParameter(f"no data directory at {data_dir}", param_hint="DATA_DIR")
    from langchain_tiered_memory.storage.postgres.migrate import migrate_directory

    with progress_bars() as progress:
        tasks: dict[str, Any] = {}

        def show(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(table, total=max(total, 1))
            progress.update(tasks[table], completed=done if total else 1)

        report = migrate_directory(
            data_dir, str(location), batch=batch, sample=sample, on_progress=show
        )
    table = Table(title=f"{escape(report.source)} -> {escape(report.target)}")
    for column in ("table", "in the directory", "in the database", "copied now"):
        table.add_column(column, justify="right")
    for name, rows in report.source_rows.items():
        table.add_row(
            name, f"{rows:,}", f"{report.target_rows[name]:,}", f"{report.copied[name]:,}"
        )
    console.print(table)
    write_json(report.to_dict(), out)
    if not report.ok:
        for problem in report.problems[:20]:
            console.print(f"[red]problem:[/] {escape(problem)}")
        console.print(f"[red]{len(report.problems)} problem(s)[/]: run the migration again")
        raise typer.Exit(code=1)
    console.print(
        f"[green]verified[/]: every table complete, {report.sampled} sampled records and "
        "messages identical. Point the application at the URL (MemoryStore(url), --store)."
    )


if __name__ == "__main__":  # pragma: no cover
    app()
