"""What ``symbolize lookup`` prints: JSON lines, or llvm-symbolizer's text, one answer per input line.

The text of a batch comes from the compiled kernel (``render_lookup_answers`` in
``native/src/warm.rs``) when every source of the module answers from its
persistent index and the kernels are built; otherwise, or where the kernel
declines a batch (a line that is not a plain address, a name that is not UTF-8),
from the Python code here, which is the reference the kernel is tested against
(tests/test_warm_kernel.py): the same bytes either way.

- JSON: ``{"address": "0x1f", "frames": [{"function": ..., "file": ..., "line": L,
  "column": C}, ...]}``, frames innermost first, with ``"reason"`` (and ``"detail"``) when
  nothing names the address; a line that is no address is echoed as ``"address"``.
- Text: per frame ``function`` then ``file:line:column`` (``??`` when unknown), a blank
  line after each address; a line that is no address is echoed alone, as
  llvm-symbolizer 14 does.
- Other plain styles (:class:`PlainStyle`: ``--output-style=GNU``, ``-a``, ``-p``,
  ``--functions=none``) are printed by the Python code alone, as LLVM 14's ``DIPrinter.cpp``
  prints them: the address first (``0x`` and hex, then a new line, or ``: `` when pretty);
  per frame the name (then a new line, or `` at `` when pretty; inlined callers pretty
  prefixed `` (inlined by) ``) and ``file:line:column`` (GNU: ``file:line``); LLVM's style
  ends each address with a blank line, GNU's does not. GNU's style without inlines shows
  the innermost frame whole, as llvm-symbolizer 14 does for addr2line's sake.
"""

# json.encoder's own C function for str (json.dumps of a str is it): importing the json package
# for it would import its decoder and scanner too, ~4.5M instructions of a cold lookup's start-up.
import sys
from _json import encode_basestring_ascii
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple, cast

from symbolize.demangle import DemangleMode, demangle, demangle_names, remember
from symbolize.formats.native import kernels
from symbolize.formats.types import Frame
from symbolize.module import Reason, Unknown
from symbolize.shaping import folded_frame, shown_name

if TYPE_CHECKING:
    from symbolize.module import Module
    from symbolize.shaping import FrameShaper


def parse_address(text: str) -> int | None:
    """``0x``-prefixed hex or decimal, like llvm-symbolizer; None when it is neither."""
    text = text.strip()
    try:
        if text[:2].lower() == "0x":
            return int(text[2:], 16)
        if text.isdecimal():
            return int(text, 10)
    except ValueError:
        return None
    return None


def unknown_json(result: Unknown) -> str:
    """The ``"reason"`` (a Reason value) and ``"detail"`` (when there is one) of an unnamed address."""
    detail = f', "detail": {encode_basestring_ascii(result.detail)}' if result.detail else ""
    return f', "reason": "{result.reason.value}"{detail}'


def frame_json(frame: Frame) -> str:
    """The frame's JSON object, as ``json.dumps`` of its dict writes it (:class:`FrameFormat`)."""
    return FrameFormat("none", True).text((frame,))


def frame_text(frame: Frame) -> str:
    """The frame's two lines of llvm-symbolizer's text (:class:`FrameFormat`)."""
    return FrameFormat("none", False).text((frame,))


class FrameFormat:
    """How an answer's frames are written: the one place both formats are spelled, for
    :func:`frame_json`, :func:`frame_text` and :class:`AnswerText`'s reference render.

    JSON: each frame ``json.dumps`` of ``{"function", "file", "line", "column"}``, spelled out (five
    times faster, and the frames are many), frames joined by ``, ``; text: per frame the name and
    ``file:line:column``, ``??`` for a name or file unknown. Names are shown as ``mode`` asks
    (:func:`symbolize.shaping.shown_name`). Each distinct name, and each file JSON encodes, is
    written once (:class:`_ShownNames`, :class:`_Quoted`): the frames of a batch share most of them.
    """

    __slots__ = ("_files", "_names", "as_json")

    def __init__(self, mode: DemangleMode, as_json: bool) -> None:
        self.as_json = as_json
        self._names = _ShownNames(mode, as_json)
        self._files = _Quoted()  # JSON's; the text writes a file as it is

    def write(self, append: Callable[[str], None], frames: Sequence[Frame]) -> None:
        """Write ``frames`` (innermost first) with ``append``: as the answer's ``"frames"`` list holds
        them (JSON, without its brackets), or as its lines (text). Straight into the caller's
        output, frame by frame: no list and no join per address."""
        names, files = self._names, self._files
        # A Frame's fields by position (function, file, line, column): a NamedTuple's field by name
        # is a descriptor call, the interpreter's slow path, and this runs for every frame shown.
        if self.as_json:
            separator = ""
            for frame in frames:
                append(f'{separator}{{"function": {names[frame[0]]}, "file": {files[frame[1]]}, '
                       f'"line": {frame[2]}, "column": {frame[3]}}}')
                separator = ", "
        else:
            for frame in frames:
                append(f"{names[frame[0]]}\n{frame[1] or '??'}:{frame[2]}:{frame[3]}\n")

    def show_names(self, results: Sequence[list[Frame] | Unknown], inlines: bool) -> None:
        """Show at once every name the frames of ``results`` will write (with ``inlines`` False,
        the outermost frame's alone, as :func:`folded_frame` names the one frame): the names of a
        batch demangled together (:func:`symbolize.demangle.demangle_names`), not one by one."""
        if inlines:
            names = {frame[0] for result in results if result.__class__ is list for frame in result}
        else:
            names = {result[-1][0] for result in results if result.__class__ is list and result}
        self._names.show(names)

    def text(self, frames: Sequence[Frame]) -> str:
        """What :meth:`write` writes, as one string."""
        out: list[str] = []
        self.write(out.append, frames)
        return "".join(out)


class _Quoted(dict[str | None, str]):
    """Each name and file as JSON writes it (``null`` for none), encoded once: the frames of a
    batch share few of them, and encoding a long path is most of a frame's text."""

    def __missing__(self, text: str | None) -> str:
        quoted = self[text] = "null" if text is None else encode_basestring_ascii(text)
        return quoted


class _ShownNames(dict[str | None, str]):
    """Each function name as an answer prints it, made once: shown as ``mode`` asks
    (:func:`symbolize.shaping.shown_name`), then written as JSON (``null`` for none) or, not
    ``as_json``, as the text (``??`` for none)."""

    def __init__(self, mode: DemangleMode, as_json: bool) -> None:
        super().__init__()
        self._mode = mode
        self._as_json = as_json

    def show(self, names: set[str | None]) -> None:
        """Each of ``names`` not shown yet, shown now: the names with text demangled together."""
        fresh = names.difference(self.keys())  # in C, as the rest up to the demangling
        fresh.discard(None)
        fresh.discard("")
        if not fresh:
            return
        new = cast(list[str], list(fresh))
        shown = demangle_names(new, self._mode)
        if self._as_json:
            self.update(zip(new, map(encode_basestring_ascii, shown), strict=True))
        elif "" in shown:  # shown as "??", as __missing__ shows it (a name demangled to nothing)
            self.update(zip(new, [text or "??" for text in shown], strict=True))
        else:
            self.update(zip(new, shown, strict=True))

    def __missing__(self, name: str | None) -> str:
        shown = shown_name(name, self._mode)
        if not self._as_json:
            text = self[name] = shown or "??"
            return text
        quoted = self[name] = "null" if shown is None else encode_basestring_ascii(shown)
        return quoted


class PlainStyle(NamedTuple):
    """How llvm-symbolizer's plain text is asked for; the default is its plain ``--output-style=LLVM``."""

    gnu: bool = False  # --output-style=GNU: no column, no blank line after an address
    addresses: bool = False  # -a, --addresses: the address before its frames
    pretty: bool = False  # -p, --pretty-print: one line per frame
    functions: bool = True  # --functions=none: False, no names

    def plain_lines(
        self, texts: Sequence[str], results: Sequence[list[Frame] | Unknown], inlines: bool
    ) -> Iterator[str]:
        """One answer per text, as :meth:`AnswerText.render_items` gives; ``results`` are whole chains
        (FrameShaper with inlines) and ``inlines`` says how many of their frames to print."""
        found = iter(results)
        for text in texts:
            vaddr = parse_address(text)
            if vaddr is None:
                yield f"{text}\n"
                continue
            result = next(found)
            frames = [] if isinstance(result, Unknown) else result
            if not inlines and len(frames) > 1:
                frames = [frames[0]] if self.gnu else [folded_frame(frames)]
            yield self.answer(vaddr, frames or [Frame(None)])

    def answer(self, vaddr: int | None, frames: list[Frame], source: Callable[[Frame], str] | None = None) -> str:
        """One address's text (no address line for None, a line llvm-symbolizer could not read);
        ``source`` gives the source lines printed after a frame's place (``--print-source-context-lines``)."""
        out = [f"{vaddr:#x}{': ' if self.pretty else chr(10)}"] if self.addresses and vaddr is not None else []
        for depth, frame in enumerate(frames):
            if self.functions:
                prefix = " (inlined by) " if self.pretty and depth else ""
                out.append(f"{prefix}{frame.function or '??'}{' at ' if self.pretty else chr(10)}")
            column = "" if self.gnu else f":{frame.column}"
            out.append(f"{frame.file or '??'}:{frame.line}{column}\n")
            if source is not None:
                out.append(source(frame))
        if not self.gnu:
            out.append("\n")
        return "".join(out)


DEFAULT_STYLE = PlainStyle()


class AnswerText:
    """The printed answers for batches of input lines, from one module, in one output format.

    A frame's text is :class:`FrameFormat`'s.
    """

    def __init__(self, shaper: "FrameShaper", as_json: bool, style: PlainStyle | None = None) -> None:
        self.shaper = shaper
        self.as_json = as_json
        self.style = style or DEFAULT_STYLE
        self._format = FrameFormat(shaper.mode, as_json)

    def render(self, module: "Module", texts: Sequence[str]) -> str:
        """The text printed for ``texts`` (one input line each)."""
        return self.render_items(module, [input_item(text) for text in texts])

    def render_items(self, module: "Module", items: Sequence[int | str]) -> str:
        """The text printed for input lines already read: an address, or a line that is none
        (echoed; read again by :func:`parse_address`, as :meth:`render` reads every line)."""
        return self._render(module, items)

    def render_hex_lines(self, module: "Module", lines: Sequence[str]) -> str:
        """:meth:`render_items` of input lines that are each ``0x`` and 1 to 16 hex digits."""
        return self._render(module, None, lines)

    def _render(self, module: "Module", items: Sequence[int | str] | None, hex_lines: Sequence[str] = ()) -> str:
        """The text of ``items``, or where None of ``hex_lines``: the kernel reads those as they
        came, so a warm batch makes no int per line only to write it out again for the kernel; the
        Python path reads them with ``int``."""
        plain = self.style != DEFAULT_STYLE and not self.as_json
        if not plain and kernels is not None and "symbolize.index.indexed" in sys.modules:
            # (A run that opened no index never imports its module: then no source answers from one.)
            compiled = self._compiled(module, _item_texts(items) if items is not None else hex_lines)
            if compiled is not None:
                return compiled
        if items is None:
            # int reads the 0x itself; the base given by position (a keyword costs a dict a call).
            items = list(map(int, hex_lines, repeat(16)))
        return self._render_plain(module, items) if plain else self._render_reference(module, items)

    def render_reference(self, module: "Module", texts: Sequence[str]) -> str:
        """:meth:`render` through the Python path alone (the kernel's reference)."""
        return self._render_reference(module, [input_item(text) for text in texts])

    def _render_reference(self, module: "Module", items: Sequence[int | str]) -> str:
        """What :class:`symbolize.shaping.FrameShaper` and :class:`FrameFormat` make of each result,
        in one loop: no shaped Frame is made per frame shown (the format shows each name as
        FrameShaper does, once per name)."""
        vaddrs = [item for item in items if not isinstance(item, str)]
        results = module.lookup(vaddrs)
        self._format.show_names(results, self.shaper.inlines)
        found = iter(results)
        as_json, inlines, write = self.as_json, self.shaper.inlines, self._format.write
        out: list[str] = []
        append = out.append
        for item in items:
            if isinstance(item, str):  # no address: echoed
                if as_json:
                    why = unknown_json(Unknown(Reason.NOT_AN_ADDRESS))
                    append(f'{{"address": {encode_basestring_ascii(item)}, "frames": []{why}}}\n')
                else:
                    append(f"{item}\n")  # llvm-symbolizer's echo: the line alone, no blank line after it
                continue
            result = next(found)
            if isinstance(result, Unknown) or not result:
                if as_json:
                    why = unknown_json(result) if isinstance(result, Unknown) else ""
                    append(f'{{"address": "{hex(item)}", "frames": []{why}}}\n')
                else:
                    append("??\n??:0:0\n\n")
                continue
            if not inlines and len(result) > 1:
                result = [folded_frame(result)]
            if as_json:
                append(f'{{"address": "{hex(item)}", "frames": [')  # hex(): no format spec to read
                write(append, result)
                append("]}\n")
            else:
                write(append, result)
                append("\n")
        return "".join(out)

    def _render_plain(self, module: "Module", items: Sequence[int | str]) -> str:
        """A :class:`PlainStyle` other than the default: whole chains, cut as the style asks."""
        from symbolize.shaping import FrameShaper

        chains = FrameShaper(self.shaper.mode, True)
        vaddrs = [item for item in items if not isinstance(item, str)]
        results = [chains.shape(result) for result in module.lookup(vaddrs)]
        return "".join(self.style.plain_lines(_item_texts(items), results, self.shaper.inlines))

    def _compiled(self, module: "Module", texts: Sequence[str]) -> str | None:
        """The kernel's text for input lines ``texts``, where every source answers from its index;
        else None."""
        assert kernels is not None
        from symbolize.index.indexed import IndexedObject

        sources = list(dict.fromkeys(module.sources))  # a source asked twice answers the same
        runs = [source.compiled_runs() if isinstance(source, IndexedObject) else None for source in sources]
        if not all(runs):
            return None
        try:
            rendered: str | None = kernels.render_lookup_answers(
                texts,
                runs,
                as_json=self.as_json,
                inlines=self.shaper.inlines,
                demangle_mode=self.shaper.mode,
                shown=_name_shower(self.shaper.mode),
                parse_address=parse_address,
                unnamed_reason=module.unnamed_reason().value,
            )
            return rendered
        except kernels.IndexInconsistentError as error:
            position = error.args[0]
            if 0 <= position < len(sources):
                source = sources[position]
                assert isinstance(source, IndexedObject)
                source.give_up_index()
            return None


def input_item(text: str) -> int | str:
    """An input line as :meth:`AnswerText.render_items` takes it: its address, else the line."""
    vaddr = parse_address(text)
    return text if vaddr is None else vaddr


def _item_texts(items: Sequence[int | str]) -> list[str]:
    """Each item as the input line it stands for: an address in hex, anything else as it came."""
    return [item if isinstance(item, str) else f"{item:#x}" for item in items]


def _name_shower(mode: DemangleMode) -> Callable[[str, str | None], str]:
    """What FrameShaper shows for a name the index stores with full demangling ``full`` (or None)."""

    def shown(name: str, full: str | None) -> str:
        if full is not None:
            remember(name, full)  # as IndexedObject._name does on the Python path
        return demangle(name, mode)

    return shown
