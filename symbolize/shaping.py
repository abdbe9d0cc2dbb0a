"""How a lookup's frames are shown: names demangled as asked, inline chains kept or folded.

Shared by the library API (symbolize/api.py) and the text answers (symbolize/answer_text.py).
"""

from __future__ import annotations

from symbolize.demangle import DemangleMode
from symbolize.demangle import demangle as demangle_name
from symbolize.formats.types import Frame
from symbolize.module import PerFrame, Unknown


def shown_name(name: str | None, mode: DemangleMode) -> str | None:
    """A frame's function name as an answer shows it: demangled as ``mode`` asks; no name stays none.
    The one naming rule of both the frames the library hands out (:class:`FrameShaper`) and the
    printed answers (symbolize/answer_text.py)."""
    return demangle_name(name, mode) if name else name


def folded_frame(frames: list[Frame]) -> Frame:
    """llvm-symbolizer's one frame without inlines: the outermost name, the innermost place and
    decl line, file and entry (its ``StartLine`` is the innermost DIE's, as ``getLineInfoForAddress``
    reads it). The one folding rule of the library's frames (:class:`FrameShaper`) and the printed
    answers."""
    innermost, outermost = frames[0], frames[-1]
    return innermost._replace(function=outermost.function)


class FrameShaper:
    """Demangles a lookup result's names and, with ``inlines=False``, folds it into one frame.

    Each distinct frame is demangled once (see :class:`symbolize.module.PerFrame`).
    """

    def __init__(self, mode: DemangleMode, inlines: bool) -> None:
        self.mode = mode
        self.inlines = inlines
        self._frame = PerFrame(self._demangled)

    def shape(self, result: list[Frame] | Unknown) -> list[Frame] | Unknown:
        if isinstance(result, Unknown) or not result:
            return result
        if self.inlines:
            return [self._frame(frame) for frame in result]
        return [folded_frame([result[0], self._frame(result[-1])])]  # only the outermost's name is shown

    def _demangled(self, frame: Frame) -> Frame:
        name = shown_name(frame.function, self.mode)
        if name == frame.function:
            return frame
        return frame._replace(function=name)
