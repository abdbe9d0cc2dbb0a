"""``lookup`` as a program drives llvm-symbolizer: input lines read as llvm-symbolizer 22 reads
them (symbolize/cli/llvm_input.py), with or without ``--obj``, and llvm-symbolizer 22's output,
``--output-style=JSON`` included (LLVM's ``DIPrinter.cpp``, ``JSONPrinter``).

JSON, one object per input line (a JSON array of them, on one line, for addresses given as
arguments), keys sorted as LLVM's ``json::Object`` writes them, no spaces:

- code: ``{"Address": "0x..", "ModuleName": FILE, "Symbol": [frame, ...]}``, frames innermost
  first, each ``{"Column", "Discriminator", "FileName", "FunctionName", "Line", "StartAddress",
  "StartFileName", "StartLine"}`` ("" and 0 when unknown), ``"Source"`` with
  ``--print-source-context-lines``, all read from the debug info (symbolize/formats/types.py,
  ``Frame``): the line row's discriminator (a calling frame's: its call's), the function DIE's
  ``DW_AT_decl_file`` and ``DW_AT_low_pc``; the outermost frame's ``StartAddress`` is the covering
  symbol's where one covers the address, as LLVM takes it with ``--functions=linkage``.
  One difference, LLVM's: llvm-symbolizer 22 writes ``StartFileName`` "" where the DIE's
  ``DW_AT_decl_file`` has the form ``DW_FORM_implicit_const`` (GCC's DWARF 5 abbreviations shared
  by most functions of a file): its ``DWARFFormValue::getAsFile`` gives no file for a value made
  from the abbreviation, which carries no unit. The file is the one ``llvm-dwarfdump`` prints
  for the same attribute, and is written here.
- a file that cannot be opened: ``{"Address", "Error": {"Message"}, "ModuleName"}``, the message
  on stderr too; a line llvm-symbolizer cannot read: the error on stderr and
  ``{"ModuleName", "Symbol": [blank frame]}``; a symbol's name: ``{"Loc": [frame...],
  "ModuleName", "SymName"}`` (its function symbols' places); ``DATA``: ``{"Address", "Data":
  {"Name", "Size", "Start"}, "ModuleName"}`` from the covering function symbol.

File names: whole, or with ``-s``/``--basenames`` their base names, or with ``--relativenames``
the names the debug info answering the address gives without the compilation directory
(``Module.relative_file_names``: per unit, as LLVM's ``FileLineInfoKind::RelativeFilePath``);
``-s`` wins over ``--relativenames``, as in LLVM.

Text: llvm-symbolizer's styles (:class:`symbolize.answer_text.PlainStyle`), with ``--verbose``'s
block per frame, ``--print-source-context-lines``' numbered source lines and the file names above;
with ``--obj``, a line that is no address is echoed, as before (README), else answered ``??``.
"""

import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from symbolize.answer_text import PlainStyle, input_item
from symbolize.cli.llvm_input import Query, parse_query
from symbolize.formats.types import Frame, ObjectFile
from symbolize.module import Unknown
from symbolize.shaping import folded_frame

if TYPE_CHECKING:
    from symbolize.api import Session
    from symbolize.demangle import DemangleMode
    from symbolize.loader import Loader
    from symbolize.module import Module
    from symbolize.shaping import FrameShaper

# The frame llvm-symbolizer prints for an address nothing names.
_BLANK_FRAME = {"Column": 0, "Discriminator": 0, "FileName": "", "FunctionName": "", "Line": 0,
                "StartAddress": "", "StartFileName": "", "StartLine": 0}  # fmt: skip


# A line that is a plain hex address below 2**64 (what parse_query reads as that address).
_HEX_ADDRESS = r"0x[0-9a-fA-F]{1,16}"
_PLAIN_HEX = re.compile(_HEX_ADDRESS).fullmatch
_PLAIN_HEX_LINES = re.compile(rf"{_HEX_ADDRESS}(?:\n{_HEX_ADDRESS})*").fullmatch


def _all_plain_hex(lines: Sequence[str]) -> bool:
    """Whether every one of ``lines`` (at least one) is a plain hex address (:data:`_PLAIN_HEX`):
    one match over the lines joined, not one per line (a tenth of a warm lookup). A line holding a
    newline itself (an argument can) would pass for two: the count of newlines rules it out."""
    joined = "\n".join(lines)
    return joined.count("\n") == len(lines) - 1 and _PLAIN_HEX_LINES(joined) is not None


class LlvmOutput(NamedTuple):
    """How the answers are printed: llvm-symbolizer's options besides where to look."""

    obj: str | None = None  # --obj; None: each line names its file
    as_json: bool = False  # --output-style=JSON
    style: PlainStyle = PlainStyle()
    inlines: bool = True
    show_functions: bool = True  # --functions=none: False
    # --functions=linkage (the default): LLVM names the outermost frame, and takes its start
    # address, from the covering symbol; with short or no names it keeps the DIE's DW_AT_low_pc.
    symbol_starts: bool = True
    relative_address: bool = False
    adjust_vma: int = 0
    basenames: bool = False
    relative_names: bool = False  # --relativenames: file names without their compilation directory
    verbose: bool = False
    context_lines: int = 0
    our_json: bool = False  # --json: our own shape (symbolize/answer_text.py)


def json_text(value: Any, pretty: bool = False) -> str:
    """``value`` as LLVM's JSON writer spells it: keys sorted, no spaces, UTF-8 kept; ``pretty``
    (``-p``) indented by two spaces, as its ``json::OStream`` indents."""
    import json  # here: only --output-style=JSON writes through it

    if pretty:
        return json.dumps(value, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=False)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class LlvmAnswers:
    """The answers to llvm-symbolizer's input lines, each file opened once for the whole run."""

    def __init__(self, session: "Session", output: LlvmOutput, arch: str | None = None) -> None:
        from symbolize.answer_text import AnswerText

        self.session = session
        self.output = output
        self.arch = arch
        self._chains = _chain_shaper(session.demangle)
        self._classic = AnswerText(session.shaper(), output.our_json, output.style)
        self._modules: dict[str, tuple[Module, Loader] | str] = {}
        self.failed = False  # a file could not be opened
        # --relativenames: the file names of the debug info answering the current address, without
        # their compilation directory (_file).
        self._renamed: Mapping[str, str] = {}
        # The --obj file's answers to the current batch's code addresses, by vaddr (_look_up_batch).
        self._batch_answers: dict[int, Any] = {}
        self._batch_module: Module | None = None

    def open(self, name: str) -> "Module | str":
        """The module of file ``name``, or why it cannot be opened (already said on stderr)."""
        from symbolize.cli.exits import error_line
        from symbolize.errors import SymbolizeError

        found = self._modules.get(name)
        if found is None:
            try:
                found = self.session.open_module(name, self.arch)
            except (SymbolizeError, OSError) as error:
                self.failed = True
                found = error_line(error).removeprefix("symbolize: error: ")
                if not self.output.as_json:  # llvm-symbolizer's JSON carries it alone
                    print(f"symbolize: error: {found}", file=sys.stderr)
            self._modules[name] = found
        return found if isinstance(found, str) else found[0]

    def open_obj(self, name: str) -> None:
        """Open the ``--obj`` file now; its error is raised (the command's one error line, exit 1)."""
        self._modules[name] = self.session.open_module(name, self.arch)

    def finish(self, answered: bool) -> None:
        """End every file's run (background indexing when ``answered``, as one lookup does)."""
        for opened in self._modules.values():
            if not isinstance(opened, str):
                self.session.finish(opened[1], answered)

    # Answers ------------------------------------------------------------------------------

    def render(self, lines: Sequence[str]) -> str:
        """The text printed for ``lines`` read from stdin: one answer per line."""
        if self._classic_output():
            return self._render_classic(lines)
        queries = [parse_query(line, self.output.obj) for line in lines]
        self._look_up_batch(queries)
        return "".join(self.answer(query) + ("\n" if self.output.as_json else "") for query in queries)

    def render_arguments(self, words: Sequence[str]) -> str:
        """The text printed for addresses given as arguments: JSON as one array, on one line."""
        if not words:
            return ""
        if self._classic_output():
            return self._render_classic(words)
        queries = [parse_query(word, self.output.obj) for word in words]
        self._look_up_batch(queries)
        answers = [self.answer(query) for query in queries]
        if self.output.as_json and self.output.style.pretty:
            import json

            return json_text([json.loads(answer) for answer in answers], pretty=True) + "\n"
        return f"[{','.join(answers)}]\n" if self.output.as_json else "".join(answers)

    def _classic_output(self) -> bool:
        """Whether the output is what ``lookup --obj`` printed before this protocol: llvm-symbolizer
        14's text or our JSON, by symbolize/answer_text.py (its compiled kernel included)."""
        output = self.output
        return output.obj is not None and not (
            output.as_json or output.relative_address or output.adjust_vma or output.basenames
            or output.relative_names or output.verbose or output.context_lines
        )  # fmt: skip

    def _render_classic(self, lines: Sequence[str]) -> str:
        obj = self.output.obj
        assert obj is not None
        module = self.open(obj)
        if isinstance(module, str):
            return ""
        if not lines:
            return ""
        if _all_plain_hex(lines):  # most batches
            return self._classic.render_hex_lines(module, lines)
        out: list[str] = []
        pending: list[int | str] = []  # an address, or a line echoed as llvm-symbolizer 14 does
        data_text = not self.output.our_json
        for line in lines:
            if _PLAIN_HEX(line):  # most lines: parse_query's answer without its steps
                pending.append(int(line[2:], 16))
                continue
            query = parse_query(line, obj)
            if query.data and query.address is not None and data_text:
                if pending:
                    out.append(self._classic.render_items(module, pending))
                    pending = []
                out.append(self._data_text(module, query.address))
            else:
                # A line that is no address is read again as AnswerText reads any line.
                pending.append(input_item(query.text) if query.address is None else query.address)
        if pending:
            out.append(self._classic.render_items(module, pending))
        return "".join(out)

    def answer(self, query: Query) -> str:
        """One query's answer: a JSON object (no new line) or the text of llvm-symbolizer's style."""
        if query.error is not None:
            if self.output.obj is not None and not self.output.as_json:
                return f"{query.text}\n"  # echoed, as llvm-symbolizer 14 does (README)
            if query.error:
                print(f"symbolize: error: '{query.text}': {query.error}", file=sys.stderr)
            if self.output.as_json:
                return self._json({"ModuleName": query.module, "Symbol": [_BLANK_FRAME]})
            return self.output.style.answer(None, [Frame(None)])
        module = self.open(query.module)
        if isinstance(module, str):
            if self.output.as_json:
                where = {"Address": f"{query.address:#x}"} if query.address is not None else {"SymName": query.symbol}
                return self._json({**where, "Error": {"Message": module}, "ModuleName": query.module})
            return self.output.style.answer(None, [Frame(None)])
        if query.symbol is not None:
            return self._symbol_answer(module, query)
        assert query.address is not None
        vaddr = self._vaddr(module, query.address)
        if query.data:
            return self._data_answer(module, query.address, vaddr, query.module)
        return self._code_answer(module, query.address, vaddr, query.module)

    def _vaddr(self, module: "Module", address: int) -> int:
        vaddr = address - self.output.adjust_vma
        if self.output.relative_address and module.image.format == "pe":
            # LLVM adds the preferred base, a PE image's ImageBase; an ELF file's is 0 to it
            # (llvm-symbolizer 22 on a non-PIE executable answers the address unmoved).
            vaddr += module.image.load_base
        return vaddr

    def _look_up_batch(self, queries: Sequence[Query]) -> None:
        """Look up the batch's code addresses in the ``--obj`` file at once, as the classic output
        does: one lookup asks each unit once for all its addresses, where one per line decodes and
        searches a unit per address. Only with ``--obj``, opened before the first line: the files
        lines name are opened as their lines are answered, so their errors keep the lines' order."""
        self._batch_answers, self._batch_module = {}, None
        opened = self._modules.get(self.output.obj) if self.output.obj is not None else None
        if opened is None or isinstance(opened, str):
            return
        module = opened[0]
        vaddrs = [
            vaddr
            for query in queries
            if query.error is None and query.address is not None and not query.data
            and 0 <= (vaddr := self._vaddr(module, query.address)) < 1 << 64
        ]  # fmt: skip
        self._batch_answers = dict(zip(vaddrs, module.lookup(vaddrs), strict=True))
        self._batch_module = module

    def _json(self, value: dict[str, Any]) -> str:
        return json_text(value, self.output.style.pretty)

    def _frames(self, module: "Module", vaddr: int) -> list[Frame]:
        if not 0 <= vaddr < 1 << 64:
            return []
        if self.output.relative_names:
            self._renamed = module.relative_file_names(vaddr)
        found = self._batch_answers.get(vaddr) if module is self._batch_module else None
        result = self._chains.shape(found if found is not None else module.lookup([vaddr])[0])
        return [] if isinstance(result, Unknown) else result

    def _code_answer(self, module: "Module", address: int, vaddr: int, name: str) -> str:
        frames = self._frames(module, vaddr)
        covering = module.image.symbol_at(vaddr) if frames else None
        if not self.output.show_functions and self._symbol_only(frames, covering):
            frames = []  # LLVM reads no symbol table when it prints no names (README)
        shown = self._cut(frames)
        symbol = covering if self.output.symbol_starts else None
        if self.output.as_json:
            return self._json({"Address": f"{address:#x}", "ModuleName": name,
                               "Symbol": self._json_frames(shown, symbol)})  # fmt: skip
        return self._text(address, shown, symbol)

    def _cut(self, frames: list[Frame]) -> list[Frame]:
        """The frames printed: all, or without inlines the one llvm-symbolizer's style shows."""
        if self.output.inlines or len(frames) < 2:
            return frames
        return [frames[0]] if self.output.style.gnu else [folded_frame(frames)]

    def _symbol_only(self, frames: list[Frame], symbol: Any) -> bool:
        """Whether the symbol table alone named the address (no line row, no DIE)."""
        return (
            symbol is not None and len(frames) == 1 and frames[0].line == 0 and frames[0].start_line == 0
            and frames[0].column == 0
        )  # fmt: skip

    def _json_frames(self, frames: list[Frame], symbol: Any) -> list[dict[str, Any]]:
        if not frames:
            return [_BLANK_FRAME]
        shown: list[dict[str, Any]] = []
        for depth, frame in enumerate(frames):
            start = self._start_address(frame, symbol if depth == len(frames) - 1 else None)
            entry: dict[str, Any] = {
                "Column": frame.column, "Discriminator": frame.discriminator, "FileName": self._file(frame.file) or "",
                "FunctionName": (frame.function or "") if self.output.show_functions else "",
                "Line": frame.line, "StartAddress": f"{start:#x}" if start is not None else "",
                "StartFileName": self._file(frame.start_file) or "", "StartLine": frame.start_line,
            }  # fmt: skip
            source = self._source(frame)
            if source:
                entry["Source"] = source
            shown.append(entry)
        return shown

    @staticmethod
    def _start_address(frame: Frame, symbol: Any) -> int | None:
        """The frame's ``StartAddress``: the covering ``symbol``'s (the outermost frame, named by
        it), else its DIE's ``DW_AT_low_pc``."""
        return symbol.vaddr if symbol is not None else frame.start_address

    def _text(self, address: int, frames: list[Frame], symbol: Any) -> str:
        style = self.output.style
        if not frames:
            return style.answer(address, [Frame(None)])
        output = self.output
        if not (output.verbose or output.context_lines or output.basenames or output.relative_names):
            return style.answer(address, frames)
        frames = [frame._replace(file=self._file(frame.file), start_file=self._file(frame.start_file))
                  for frame in frames]
        if not self.output.verbose:
            return style.answer(address, frames, self._source)
        out = [f"{address:#x}{': ' if style.pretty else chr(10)}"] if style.addresses else []
        for depth, frame in enumerate(frames):
            prefix = " (inlined by) " if style.pretty and depth else ""
            name = (frame.function or "??") if style.functions else ""
            out.append(f"{prefix}{name}{' at ' if style.pretty else chr(10)}" if style.functions else "")
            out.append(f"  Filename: {frame.file or '??'}\n")
            if frame.start_line:
                out.append(f"  Function start filename: {frame.start_file or ''}\n")
                out.append(f"  Function start line: {frame.start_line}\n")
            start = self._start_address(frame, symbol if depth == len(frames) - 1 and not style.gnu else None)
            if start is not None:
                out.append(f"  Function start address: {start:#x}\n")
            out.append(f"  Line: {frame.line}\n  Column: {frame.column}\n")
            if frame.discriminator:
                out.append(f"  Discriminator: {frame.discriminator}\n")
            out.append(self._source(frame))
        if not style.gnu:
            out.append("\n")
        return "".join(out)

    def _file(self, file: str | None) -> str | None:
        """A file name as printed: its base name with ``-s`` (which wins, as in LLVM), its name
        without the compilation directory with ``--relativenames``."""
        if file is None:
            return file
        if self.output.basenames:
            return os.path.basename(file)
        if self.output.relative_names:
            return self._renamed.get(file, file)
        return file

    def _source(self, frame: Frame) -> str:
        """``--print-source-context-lines``: the lines around the frame's, as DIPrinter numbers them."""
        count = self.output.context_lines
        if not count or not frame.file or not frame.line:
            return ""
        first = max(1, frame.line - count // 2)
        last = first + count  # exclusive
        try:
            with open(frame.file, "rb") as source:
                texts = source.read().split(b"\n")
        except OSError:
            return ""
        width = len(str(last - 1))
        out = []
        for number in range(first, min(last, len(texts) + 1)):
            if number == len(texts) and not texts[-1]:
                break  # the new line ending the file starts no line
            marker = " >: " if number == frame.line else "  : "
            out.append(f"{number:>{width}}{marker}{texts[number - 1].decode('utf-8', 'replace')}\n")
        return "".join(out)

    def _symbol_answer(self, module: "Module", query: Query) -> str:
        """A symbol's name: the place of each function symbol so named (llvm-symbolizer 22)."""
        # Every image the loader opens is a reader, and every reader lists its symbols (ObjectFile).
        image = cast(ObjectFile, module.image)
        symbols = [symbol for symbol in image.symbols() if symbol.name == query.symbol]
        if self.output.obj is not None and not self.output.as_json:
            return f"{query.text}\n"  # echoed, as llvm-symbolizer 14 does (README)
        found: list[dict[str, Any]] = []
        texts: list[str] = []
        for symbol in symbols:
            frames = self._frames(module, symbol.vaddr)  # the place's file names (--relativenames)
            if not frames:
                continue
            frame = folded_frame(frames)
            if self.output.as_json:
                found.append({**self._json_frames([frame], symbol)[0], "StartAddress": f"{symbol.vaddr:#x}"})
            else:
                texts.append(self._text(symbol.vaddr, [frame], symbol))
        if self.output.as_json:
            return self._json({"Loc": found, "ModuleName": query.module, "SymName": query.symbol})
        return "".join(texts) if texts else self.output.style.answer(None, [Frame(None)])

    def _data_answer(self, module: "Module", address: int, vaddr: int, module_name: str) -> str:
        if self.output.as_json:
            symbol = module.image.symbol_at(vaddr) if 0 <= vaddr < 1 << 64 else None
            name, start, size = (symbol.name, symbol.vaddr, symbol.size) if symbol else ("", 0, 0)
            data = {"Name": name, "Size": f"{size:#x}", "Start": f"{start:#x}"}
            return self._json({"Address": f"{address:#x}", "Data": data, "ModuleName": module_name})
        return self._data_text(module, vaddr)

    def _data_text(self, module: "Module", vaddr: int) -> str:
        """llvm-symbolizer's DATA answer: the name, ``START SIZE`` in decimal, the symbol's source file."""
        symbol = module.image.symbol_at(vaddr) if 0 <= vaddr < 1 << 64 else None
        if symbol is None:
            return "??\n0 0\n??:0\n\n"
        source = os.path.basename(symbol.source_file) if symbol.source_file else "??"
        return f"{symbol.name}\n{symbol.vaddr} {symbol.size}\n{source}:0\n\n"


def _chain_shaper(mode: "DemangleMode") -> "FrameShaper":
    from symbolize.shaping import FrameShaper

    return FrameShaper(mode, True)


def lookup_answers(
    answers: LlvmAnswers, arguments: Sequence[str] | None, stdin_batches: Iterator[list[str]]
) -> Iterator[str]:
    """The text to print, batch by batch: the arguments' answers, else each stdin batch's."""
    answered = False
    try:
        if arguments is not None:
            yield answers.render_arguments(arguments)
        else:
            for lines in stdin_batches:
                yield answers.render(lines)
        answered = True
    finally:
        answers.finish(answered)
