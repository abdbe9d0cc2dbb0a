"""Each option declared in symbolize/cli/options.py means the same to typer (symbolize/cli/app.py) and
to the plain lookup and profile that run without it (symbolize/cli/entry.py): the same names, help,
default, type and choices, and the same request for the same command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

import symbolize.cli.app as cli_app
from symbolize.cli.commands import LookupRequest
from symbolize.cli.entry import plain_command
from symbolize.cli.options import COMMAND_OPTIONS, LOOKUP_OPTIONS, PROFILE_OPTIONS, CliOption, Kind
from symbolize.cli.profile_command import ProfileRequest

# A declaration's kind -> the names of the click parameter type typer builds for it (click calls
# its string type "text", the copy typer 0.2x carries "str").
_TYPE_NAMES = {
    Kind.FLAG: {"boolean"},
    Kind.SWITCH: {"boolean"},
    Kind.TEXT: {"text", "str"},
    Kind.PATH: {"path"},
    Kind.PATHS: {"path"},
    Kind.TEXTS: {"text", "str"},
    Kind.CHOICE: {"choice"},
    Kind.ARGUMENTS: {"text", "str"},
    Kind.PATH_ARGUMENTS: {"path"},
    Kind.ARGUMENT: {"path"},
}


def _click_command(name: str) -> Any:
    """The click command typer builds for ``name`` (typer may carry its own copy of click, so read
    by click's attributes, not its classes)."""
    command: Any = typer.main.get_command(cli_app.app)
    for word in name.split():
        command = command.commands[word]
    return command


def _differences(declared: CliOption, param: Any) -> list[str]:
    """How typer's parameter differs from its declaration (empty when it does not)."""
    found: dict[str, tuple[Any, Any]] = {
        "name": (declared.field, param.name),
        "repeatable": (declared.repeatable, param.multiple),
        "metavar": (declared.metavar, param.metavar),
        "help": (declared.help, param.help),
        "required": (declared.required, param.required),
        "default": (None if declared.required else declared.default, param.default),
        "envvar": (declared.envvar, param.envvar),
    }
    if param.type.name not in _TYPE_NAMES[declared.kind]:
        found["type"] = (declared.kind.value, param.type.name)
    if param.param_type_name == "option":
        found["names"] = (list(declared.names), param.opts)
        found["off names"] = (list(declared.off_names), param.secondary_opts)
        found["flag"] = (declared.kind in (Kind.FLAG, Kind.SWITCH), param.is_flag)
    else:
        found["names"] = (list(declared.names), [])
        found["positional words"] = (1 if declared.kind is Kind.ARGUMENT else -1, param.nargs)
    if param.type.name == "choice":
        found["choices"] = (declared.choices, tuple(param.type.choices))
        found["case sensitive"] = (declared.case_sensitive, param.type.case_sensitive)
    return [f"{what}: declared {mine!r}, typer {theirs!r}" for what, (mine, theirs) in found.items() if mine != theirs]


@pytest.mark.parametrize("command", sorted(COMMAND_OPTIONS))
def test_typer_builds_each_option_as_declared(command: str) -> None:
    options = COMMAND_OPTIONS[command]
    params = _click_command(command).params
    assert [param.name for param in params] == [declared.field for declared in options], "one parameter a declaration"
    differences = {
        declared.field: found
        for declared, param in zip(options, params, strict=True)
        if (found := _differences(declared, param))
    }
    assert not differences, f"{command}: {differences}"


@pytest.mark.parametrize(
    ("request_type", "options"), [(LookupRequest, LOOKUP_OPTIONS), (ProfileRequest, PROFILE_OPTIONS)]
)
def test_the_requests_defaults_are_the_declarations(request_type: type[Any], options: tuple[CliOption, ...]) -> None:
    assert request_type._fields == tuple(declared.field for declared in options)
    for declared in options:
        if not declared.required:
            assert request_type._field_defaults[declared.field] == declared.default, declared.field


def _sample_lines(command: str, options: tuple[CliOption, ...], required: list[str]) -> list[list[str]]:
    """A command line for every spelling of every option the plain path reads, and one with none."""
    lines = [[command, *required]]
    for declared in options:
        if not declared.plain:
            continue
        for name in (*declared.names, *declared.off_names):
            if declared.kind in (Kind.FLAG, Kind.SWITCH):
                lines.append([command, *required, name])
            elif declared.kind is Kind.CHOICE:
                lines.extend([command, *required, name, choice] for choice in declared.choices)
            elif declared.repeatable:
                lines.append([command, *required, name, "d1", name, "d2"])
            elif declared.kind in (Kind.PATH, Kind.TEXT) and declared.field not in ("obj",):
                # lookup's numeric options are checked by the command (lookup_usage_problem).
                value = "3" if declared.field in ("adjust_vma", "context_lines") else "value"
                lines.append([command, *required, name, value])
    return lines


_LINES = [
    *_sample_lines("lookup", LOOKUP_OPTIONS, ["--obj", "a.out", "0x10", "zz"]),
    *_sample_lines("lookup", LOOKUP_OPTIONS, ["-e", "a.out"]),
    ["lookup", "--exe", "a.out", "0x10"],
    ["lookup", "--obj=a.out"],
    *_sample_lines("profile", PROFILE_OPTIONS, ["in.pb"]),
]


def _as_typer_would(request: LookupRequest | ProfileRequest) -> dict[str, Any]:
    """``request``'s fields, a repeated option's or the addresses' values as one tuple (typer gives a
    list or None, the plain path a tuple, the same to every command)."""
    return {
        field: tuple(value or ())
        if isinstance(value, list | tuple) or (value is None and field in _SEQUENCES)
        else value
        for field, value in request._asdict().items()
    }


_SEQUENCES = {
    declared.field
    for declared in (*LOOKUP_OPTIONS, *PROFILE_OPTIONS)
    if declared.repeatable or declared.kind is Kind.ARGUMENTS
}


@pytest.mark.parametrize("words", _LINES, ids=" ".join)
def test_the_plain_path_asks_for_what_typer_asks_for(words: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMBOLIZE_BACKGROUND_INDEX", raising=False)
    asked: list[LookupRequest | ProfileRequest] = []

    def record(request: LookupRequest | ProfileRequest, *, debug: bool) -> int:
        asked.append(request)
        return 0

    monkeypatch.setattr(cli_app, "run_lookup", record)
    monkeypatch.setattr(cli_app, "run_profile", record)
    result = CliRunner().invoke(cli_app.app, words)
    assert result.exit_code == 0, result.output
    plain = plain_command(words)
    assert plain is not None, "the plain path should read this line"
    assert type(plain) is type(asked[0])
    assert _as_typer_would(plain) == _as_typer_would(asked[0])


def test_the_plain_path_reads_every_plain_option() -> None:
    read = {word for line in _LINES for word in line if word.startswith("-")}
    for declared in (*LOOKUP_OPTIONS, *PROFILE_OPTIONS):
        if declared.plain:
            assert {*declared.names, *declared.off_names} <= read, declared.field


def test_a_value_outside_the_choices_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMBOLIZE_BACKGROUND_INDEX", raising=False)
    assert plain_command(["lookup", "--obj", "a.out", "--demangle", "bogus"]) is None
    assert plain_command(["profile", "in.pb", "--demangle=bogus"]) is None
    assert plain_command(["profile", "in.pb", "--demangle=short"]) == ProfileRequest(Path("in.pb"), demangle="short")
