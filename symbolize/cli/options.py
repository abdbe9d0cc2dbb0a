"""The command line's options, declared once: names, help, defaults, kinds.

typer builds the commands' options from these (symbolize/cli/app.py), and the plain ``lookup`` and
``profile`` that run without typer read their command lines by them (symbolize/cli/entry.py), so
help, defaults and what a value may be cannot differ between the two. tests/test_cli_options.py
compares every declaration with the click parameter typer builds from it. Nothing here imports
typer: this module is on the plain path's start-up.
"""

import enum
from typing import Any, NamedTuple

from symbolize.cli.spellings import DEMANGLE_MODES


class Kind(enum.Enum):
    """What an option's words mean, as click reads them."""

    FLAG = "flag"  # --json: True when given, else the default
    SWITCH = "switch"  # --inlines/--no-inlines: True or False
    TEXT = "text"  # one value
    PATH = "path"  # one value, a path
    PATHS = "paths"  # a path, repeatable
    TEXTS = "texts"  # one value, repeatable
    CHOICE = "choice"  # one of ``choices``
    ARGUMENTS = "arguments"  # positional words, any number
    PATH_ARGUMENTS = "path arguments"  # positional paths, any number
    ARGUMENT = "argument"  # one positional word, a path


class CliOption(NamedTuple):
    """One option (or argument) of a command: the parameter ``field`` of the command function.

    A NamedTuple, not a dataclass: the plain path's start-up would import ``dataclasses`` for it,
    and with it ``inspect``, ``ast``, ``dis`` and ``tokenize`` (~40M instructions, a tenth of a
    one-address lookup, where no other module of the path needs them)."""

    field: str
    names: tuple[str, ...]  # the spellings that turn it on or take its value (none for an argument)
    kind: Kind
    help: str
    default: Any = None
    metavar: str | None = None
    off_names: tuple[str, ...] = ()  # a switch's spellings that turn it off
    choices: tuple[str, ...] = ()
    case_sensitive: bool = True
    envvar: str | None = None
    # False: only typer reads it; a command line that gives it is handed to typer whole.
    plain: bool = True

    @property
    def required(self) -> bool:
        return self.default is ...

    @property
    def takes_value(self) -> bool:
        return self.kind in (Kind.TEXT, Kind.TEXTS, Kind.PATH, Kind.PATHS, Kind.CHOICE)

    @property
    def repeatable(self) -> bool:
        return self.kind in (Kind.PATHS, Kind.TEXTS)


# --background-index/--no-background-index's environment variable.
BACKGROUND_INDEX_VARIABLE = "SYMBOLIZE_BACKGROUND_INDEX"

SEARCH_PATHS = CliOption(
    "search_paths", ("--search-path",), Kind.PATHS, "Where to look for binaries and debug files.", metavar="DIR"
)
DEBUG_DIRS = CliOption("debug_dirs", ("--debug-dir",), Kind.PATHS, "Debug file directory.", metavar="DIR")
CACHE_DIR = CliOption(
    "cache_dir",
    ("--cache-dir",),
    Kind.PATH,
    "Index cache (default: $SYMBOLIZE_CACHE_DIR, else the per-user cache).",
    metavar="DIR",
)
NO_CACHE = CliOption("no_cache", ("--no-cache",), Kind.FLAG, "Do not read persistent indexes.", default=False)
# The shared index store (symbolize/index_store/); its variable is symbolize/cache.py's INDEX_STORE_VARIABLE.
INDEX_STORE = CliOption(
    "index_store",
    ("--index-store",),
    Kind.TEXT,
    "Shared index store: s3://BUCKET/PREFIX (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), gs://, az://, "
    "another fsspec URL, or a directory. Indexes missing here are fetched from it; those built here published.",
    metavar="URL",
    envvar="SYMBOLIZE_INDEX_STORE",
)
BACKGROUND_INDEX = CliOption(
    "background_index",
    ("--background-index",),
    Kind.SWITCH,
    "After answering, index the files found without an index, in a detached process, for next time.",
    default=True,
    off_names=("--no-background-index",),
    envvar=BACKGROUND_INDEX_VARIABLE,
)

# Debug files from servers (symbolize/remote/): nothing goes to the network unless one of these asks.
DEBUGINFOD = CliOption(
    "debuginfod",
    ("--debuginfod",),
    Kind.TEXTS,
    "A debuginfod server to ask for debug files and binaries by build ID (repeatable: raced).",
    metavar="URL",
)
SYMBOL_SERVER = CliOption(
    "symbol_servers",
    ("--symbol-server",),
    Kind.TEXTS,
    "A symbol store or server, as an _NT_SYMBOL_PATH entry (srv*CACHE*URL, a directory; repeatable).",
    metavar="SPEC",
)
REMOTE = CliOption(
    "remote",
    ("--remote",),
    Kind.FLAG,
    "Also ask the servers the environment names (DEBUGINFOD_URLS, _NT_SYMBOL_PATH's HTTP entries).",
    default=False,
)
OFFLINE = CliOption(
    "offline",
    ("--offline",),
    Kind.FLAG,
    "No request to any server: only what the download caches hold.",
    default=False,
)
REMOTE_OPTIONS = (DEBUGINFOD, SYMBOL_SERVER, REMOTE, OFFLINE)

PROFILE_OPTIONS = (
    CliOption(
        "in_path",
        (),
        Kind.ARGUMENT,
        "pprof, gperftools or OTLP profile (protobuf or JSON), gzipped or not; - for stdin.",
        default=...,
        metavar="IN",
    ),
    CliOption(
        "out_path",
        ("-o", "--output"),
        Kind.PATH,
        "Output file; - for stdout (default: IN with .symbolized before its extension; stdout for IN -).",
        metavar="OUT",
    ),
    CliOption("binaries", ("--binary",), Kind.PATHS, "A binary of the profile.", metavar="FILE"),
    SEARCH_PATHS,
    DEBUG_DIRS,
    CliOption("demangle", ("--demangle",), Kind.CHOICE, "Name style.", default="full", choices=DEMANGLE_MODES),
    CliOption(
        "no_return_address_adjust",
        ("--no-return-address-adjust",),
        Kind.FLAG,
        "Look callers up at their address, not address - 1.",
        default=False,
    ),
    CliOption("json_summary", ("--json-summary",), Kind.FLAG, "Print the summary as JSON on stdout.", default=False),
    CliOption(
        "drop_frames",
        ("--drop-frames",),
        Kind.TEXT,
        "Set the profile's drop_frames (pprof hides matching frames and their callees); "
        "the summary's top functions skip them too.",
        metavar="REGEX",
        plain=False,  # checked as a regular expression by typer's command
    ),
    CACHE_DIR,
    NO_CACHE,
    BACKGROUND_INDEX,
    INDEX_STORE,
    # profile's CI gates (exit codes in symbolize/cli/exits.py) and Rust names.
    CliOption(
        "fail_unnamed_above",
        ("--fail-unnamed-above",),
        Kind.TEXT,
        "Exit 4 (after writing OUT) when more than PCT percent of any sample type's value stays unnamed.",
        metavar="PCT",
        plain=False,  # checked as a number from 0 to 100 by typer's command
    ),
    CliOption(
        "require_verified",
        ("--require-verified",),
        Kind.FLAG,
        "Exit 5 (after writing OUT) when a mapping's binary was matched by file name only, no build ID checked.",
        default=False,
    ),
    CliOption(
        "keep_hashes",
        ("--keep-hashes",),
        Kind.FLAG,
        "Keep Rust's ::h<hash> suffixes in function names (default: dropped, generics kept).",
        default=False,
    ),
    *REMOTE_OPTIONS,
)

# batch: many profiles, each as `profile` rewrites it, with the same options (symbolize/batch/); its
# workers build a missing index themselves, for the rest of the batch, where profile leaves it to a
# detached process.
_BATCH_BACKGROUND_INDEX_HELP = (
    "Build an index missing from the cache in the worker, before answering from it: the rest of the batch "
    "answers from it too."
)
BATCH_OPTIONS = (
    CliOption(
        "inputs",
        (),
        Kind.PATH_ARGUMENTS,
        "Profiles (pprof or gperftools), gzipped or not.",
        default=...,
        metavar="IN...",
    ),
    CliOption(
        "out_dir",
        ("-o", "--output-dir"),
        Kind.PATH,
        "Directory of the outputs, each named as `symbolize profile` names IN's (created if missing).",
        default=...,
        metavar="OUTDIR",
    ),
    CliOption(
        "workers",
        ("--workers",),
        Kind.TEXT,
        "Worker processes (default: one per CPU; with --dask, the cluster's threads).",
        metavar="N",
    ),
    CliOption(
        "dask",
        ("--dask",),
        Kind.TEXT,
        "Run on the Dask cluster whose scheduler is at this address (the scale extra).",
        metavar="SCHEDULER",
    ),
    *(
        declared._replace(help=_BATCH_BACKGROUND_INDEX_HELP) if declared.field == "background_index" else declared
        for declared in PROFILE_OPTIONS
        if declared.field not in ("in_path", "out_path")
    ),
)

LOOKUP_OPTIONS = (
    CliOption(
        "obj",
        ("--obj", "-e", "--exe"),
        Kind.PATH,
        "The object file (binary); without it each address is FILE ADDR, as llvm-symbolizer reads it.",
        metavar="FILE",
    ),
    CliOption("addresses", (), Kind.ARGUMENTS, "Object addresses; else stdin.", metavar="[ADDR...]"),
    CliOption("as_json", ("--json",), Kind.FLAG, "One JSON object per line (our own shape).", default=False),
    CliOption(
        "inlines",
        ("--inlines",),
        Kind.SWITCH,
        "Show inlined frames (also -i, --inlining[=BOOL]).",
        default=True,
        off_names=("--no-inlines",),
    ),
    CliOption(
        "demangle",
        ("--demangle",),
        Kind.CHOICE,
        "Name style (-C and --demangle alone: full; --no-demangle: none).",
        default="full",
        choices=DEMANGLE_MODES,
    ),
    # llvm-symbolizer's output options: only typer reads them (lookup_command checks their mix).
    CliOption(
        "print_addresses",
        ("-a", "--addresses", "--print-address"),
        Kind.FLAG,
        "Print the address before its frames.",
        default=False,
        plain=False,
    ),
    CliOption("pretty", ("-p", "--pretty-print"), Kind.FLAG, "One line per frame.", default=False, plain=False),
    CliOption(
        "output_style",
        ("--output-style",),
        Kind.CHOICE,
        "LLVM (default), GNU (addr2line's: no column) or JSON (llvm-symbolizer's own shape).",
        default="LLVM",
        choices=("LLVM", "GNU", "JSON"),
        case_sensitive=False,
    ),
    CliOption(
        "functions",
        ("--functions",),
        Kind.CHOICE,
        "Function names: linkage (default, also -f), short (as --demangle short), none.",
        default="linkage",
        choices=("linkage", "short", "none"),
        plain=False,
    ),
    CliOption(
        "relative_address",
        ("--relative-address",),
        Kind.FLAG,
        "Addresses are relative to the image base.",
        default=False,
    ),
    CliOption("adjust_vma", ("--adjust-vma",), Kind.TEXT, "Subtract OFFSET from each address.", metavar="OFFSET"),
    CliOption("basenames", ("-s", "--basenames"), Kind.FLAG, "File names without directories.", default=False),
    CliOption(
        "relativenames",
        ("--relativenames",),
        Kind.FLAG,
        "File names without the compilation directory.",
        default=False,
    ),
    CliOption("verbose", ("--verbose",), Kind.FLAG, "llvm-symbolizer's block of fields per frame.", default=False),
    CliOption(
        "context_lines",
        ("--print-source-context-lines",),
        Kind.TEXT,
        "Print N lines of the source around each frame's line.",
        metavar="N",
    ),
    SEARCH_PATHS,
    DEBUG_DIRS,
    CACHE_DIR,
    NO_CACHE,
    BACKGROUND_INDEX,
    INDEX_STORE,
    CliOption("arch", ("--arch",), Kind.TEXT, "Slice of a universal Mach-O (or --obj FILE:ARCH).", metavar="ARCH"),
    *REMOTE_OPTIONS,
)

INDEX_OPTIONS = (
    CliOption("binaries", (), Kind.PATH_ARGUMENTS, "Binaries to index.", default=..., metavar="BINARY..."),
    SEARCH_PATHS,
    DEBUG_DIRS,
    CACHE_DIR,
    INDEX_STORE,
)

CACHE_SHOW_OPTIONS = (
    CACHE_DIR,
    CliOption("as_json", ("--json",), Kind.FLAG, "One JSON object with every index.", default=False),
)

CACHE_CLEAR_OPTIONS = (CACHE_DIR,)

STAMP_OPTIONS = (
    CliOption("in_path", (), Kind.ARGUMENT, "Profile, gzipped or not; - for stdin.", default=..., metavar="IN"),
    CliOption(
        "out_path",
        ("-o", "--output"),
        Kind.PATH,
        "The stamped pprof profile (gzipped when OUT ends in .gz or IN was); - for stdout; may be IN.",
        default=...,
        metavar="OUT",
    ),
    CliOption(
        "binaries",
        ("--binary",),
        Kind.PATHS,
        "The file of the mappings with its base name, instead of the path they record.",
        metavar="FILE",
    ),
    CliOption("json_summary", ("--json-summary",), Kind.FLAG, "Print the report as JSON on stdout.", default=False),
)

CACHE_PRUNE_OPTIONS = (
    CliOption(
        "cache_dir",
        ("--cache-dir",),
        Kind.PATH,
        "Cache whose downloads/ to prune (default: $SYMBOLIZE_CACHE_DIR, else the per-user cache).",
        metavar="DIR",
    ),
    CliOption(
        "max_size",
        ("--max-size",),
        Kind.TEXT,
        "Keep the downloaded debug files within this size, least recently used removed first (10G, 500M).",
        default="10G",
        metavar="SIZE",
    ),
    CliOption(
        "max_age",
        ("--max-age",),
        Kind.TEXT,
        "Remove the downloaded debug files unused for longer than this (7d, 12h, 30m, seconds).",
        default="7d",
        metavar="AGE",
    ),
)

CONVERT_OPTIONS = (
    CliOption(
        "in_path",
        (),
        Kind.ARGUMENT,
        "pprof, gperftools or OTLP profile (protobuf or JSON), gzipped or not; - for stdin.",
        default=...,
        metavar="IN",
    ),
    CliOption("out_path", ("-o", "--output"), Kind.PATH, "Output file; - for stdout.", default=..., metavar="OUT"),
    CliOption("to", ("--to",), Kind.CHOICE, "Output format.", default=..., choices=("otlp", "pprof")),
    CliOption(
        "encoding",
        ("--encoding",),
        Kind.CHOICE,
        "Encoding of OTLP output.",
        default="protobuf",
        choices=("protobuf", "json"),
    ),
    CliOption(
        "original_payload",
        ("--original-payload",),
        Kind.FLAG,
        "Put the pprof input's bytes in the OTLP profile's original_payload.",
        default=False,
    ),
)

def _declared(options: tuple[CliOption, ...], *fields: str) -> tuple[CliOption, ...]:
    return tuple(next(declared for declared in options if declared.field == name) for name in fields)


SERVE_OPTIONS = (
    CliOption(
        "forward",
        ("--forward",),
        Kind.TEXT,
        "The OTLP/HTTP receiver the named exports go to (its /v1development/profiles when URL has no path).",
        default=...,
        metavar="URL",
    ),
    CliOption(
        "forward_headers",
        ("--forward-header",),
        Kind.TEXTS,
        "A header sent with every forwarded export, e.g. 'Authorization: Bearer TOKEN' (repeatable).",
        metavar="'NAME: VALUE'",
    ),
    CliOption(
        "listen",
        ("--listen",),
        Kind.TEXT,
        "Address to take exports on (port 0: any free port, said on stderr).",
        default="127.0.0.1:4318",
        metavar="HOST:PORT",
    ),
    *_declared(
        PROFILE_OPTIONS, "binaries", "search_paths", "debug_dirs", "demangle", "cache_dir", "no_cache", "index_store"
    ),
    CliOption(
        "max_pending",
        ("--max-pending",),
        Kind.TEXT,
        "Exports in flight at once (queued, naming, forwarding); more are answered 429 + Retry-After.",
        default="32",
        metavar="N",
    ),
    CliOption(
        "max_body_mib",
        ("--max-body-mib",),
        Kind.TEXT,
        "Largest request body taken, in MiB, as sent (a larger one is answered 413).",
        default="32",
        metavar="MIB",
    ),
    CliOption(
        "forward_deadline",
        ("--forward-deadline",),
        Kind.TEXT,
        "Seconds to retry a receiver that is down or busy before answering the sender 503 + Retry-After.",
        default="10",
        metavar="SECONDS",
    ),
    CliOption(
        "shutdown_timeout",
        ("--shutdown-timeout",),
        Kind.TEXT,
        "On SIGTERM, seconds for exports in flight to finish; the rest are answered 503 + Retry-After.",
        default="20",
        metavar="SECONDS",
    ),
    *REMOTE_OPTIONS,
)

# Command name -> its options, for the commands typer builds from this module.
COMMAND_OPTIONS: dict[str, tuple[CliOption, ...]] = {
    "profile": PROFILE_OPTIONS,
    "batch": BATCH_OPTIONS,
    "lookup": LOOKUP_OPTIONS,
    "index": INDEX_OPTIONS,
    "cache show": CACHE_SHOW_OPTIONS,
    "cache clear": CACHE_CLEAR_OPTIONS,
    "stamp": STAMP_OPTIONS,
    "cache prune": CACHE_PRUNE_OPTIONS,
    "convert": CONVERT_OPTIONS,
    "serve": SERVE_OPTIONS,
}


def option(options: tuple[CliOption, ...], field: str) -> CliOption:
    """The option of ``options`` that sets ``field``."""
    return next(declared for declared in options if declared.field == field)
