"""The compiled core's goals (whole-process time, ratio to llvm-symbolizer 14 in the same run), checked
against a run's figures: a table saying, per binary, what was measured, the goal, and whether it is met.

Benchmarks, not tests: the table reports, it fails nothing. The goals:

- cold 1k <= 0.6x and cold 10k <= 0.8x of llvm-symbolizer's median wall time; peak RSS below its;
- warm 10k <= 0.25x;
- index build 5x faster than before (``--index-before LABEL=SECONDS``, CPU seconds of the earlier build);
- ``symbolize profile`` of the profile: cold no slower than pprof driving llvm-symbolizer
  (``-symbolize=local``), warm <= 0.3x of it.

Rows marked "info" have no goal: the compiled path's ratio to the Python reference
(``SYMBOLIZE_PURE_PYTHON=1``), when ``--pure-python`` measured it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

GOALS_HEADER = ["binary", "figure", "measured", "goal", "met"]

BASELINE = "llvm-symbolizer"
COLD = "symbolize (cold)"
WARM = "symbolize (warm)"
COLD_PYTHON = "symbolize (cold, Python only)"


@dataclass(frozen=True, slots=True)
class Figures:
    """One binary's medians: wall seconds and peak RSS MB per (tool, N); index CPU seconds per mode."""

    label: str
    seconds: Mapping[tuple[str, int], float]
    peak_rss_mb: Mapping[tuple[str, int], float]
    index_cpu: Mapping[str, float]


def _ratio_row(label: str, figure: str, mine: float | None, theirs: float | None, limit: float) -> list[str]:
    if mine is None or not theirs:
        return [label, figure, "not measured", f"<= {limit:g}x", "-"]
    ratio = mine / theirs
    return [label, figure, f"{ratio:.2f}x ({mine:.3f} s / {theirs:.3f} s)", f"<= {limit:g}x", _met(ratio <= limit)]


def _met(met: bool) -> str:
    return "yes" if met else "no"


def lookup_goal_rows(figures: Figures, index_before: Mapping[str, float]) -> list[list[str]]:
    label, seconds, rss = figures.label, figures.seconds, figures.peak_rss_mb
    llvm_1k, llvm_10k = seconds.get((BASELINE, 1000)), seconds.get((BASELINE, 10_000))
    rows = [
        _ratio_row(label, "cold 1k vs llvm-symbolizer", seconds.get((COLD, 1000)), llvm_1k, 0.6),
        _ratio_row(label, "cold 10k vs llvm-symbolizer", seconds.get((COLD, 10_000)), llvm_10k, 0.8),
        _ratio_row(label, "warm 10k vs llvm-symbolizer", seconds.get((WARM, 10_000)), llvm_10k, 0.25),
    ]
    for n in sorted({n for tool, n in rss if tool == COLD}):
        mine, theirs = rss.get((COLD, n)), rss.get((BASELINE, n))
        if mine is not None and theirs is not None:
            measured = f"{mine:.0f} MB vs {theirs:.0f} MB"
            rows.append([label, f"cold {n} peak RSS", measured, "below llvm-symbolizer's", _met(mine < theirs)])
    index_cpu = figures.index_cpu.get("compiled")
    before = index_before.get(label)
    if index_cpu is None:
        rows.append([label, "index build CPU", "not measured", "5x faster", "-"])
    elif before is None:
        rows.append([label, "index build CPU", f"{index_cpu:.3f} s", "5x faster (give --index-before)", "-"])
    else:
        speedup = before / index_cpu if index_cpu else float("inf")
        rows.append([
            label, "index build CPU", f"{index_cpu:.3f} s, {speedup:.1f}x faster than {before:.3f} s", "5x faster",
            _met(speedup >= 5),
        ])  # fmt: skip
    for n in sorted({n for tool, n in seconds if tool == COLD_PYTHON}):
        mine, reference = seconds.get((COLD, n)), seconds.get((COLD_PYTHON, n))
        if mine is not None and reference:
            rows.append([label, f"cold {n}: compiled / Python reference", f"{mine / reference:.2f}x", "info", "-"])
    index_python = figures.index_cpu.get("Python only")
    if index_cpu is not None and index_python:
        ratio = f"{index_cpu / index_python:.2f}x"
        rows.append([label, "index build CPU: compiled / Python reference", ratio, "info", "-"])
    return rows


def profile_goal_rows(label: str, medians: Mapping[str, float], pprof_mode: str) -> list[list[str]]:
    pprof = medians.get(pprof_mode)
    return [
        _ratio_row(label, "profile cold vs pprof", medians.get("cold"), pprof, 1.0),
        _ratio_row(label, "profile warm vs pprof", medians.get("warm"), pprof, 0.3),
    ]


def parse_index_before(text: str) -> tuple[str, float]:
    """``LABEL=SECONDS`` (the binary's file name and the CPU seconds of its earlier index build)."""
    label, _, seconds = text.rpartition("=")
    if not label:
        raise ValueError(f"--index-before wants LABEL=SECONDS, got {text!r}")
    return label, float(seconds)
