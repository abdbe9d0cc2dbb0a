"""What one worker of ``symbolize batch`` does with its shard: each profile through the same call as
``symbolize profile`` (:func:`symbolize.api.symbolize_file`), one :class:`~symbolize.api.Session`
for the shard, its loader kept open while the profiles share a key (symbolize/batch/plan.py), so
the files and indexes the first of them opened answer the rest.

A profile that fails is one :class:`ProfileOutcome` with its error line, and the worker goes on
with the next; its output is never half-written (the write is atomic: symbolize/pprof.py). The
loader is renewed after a failure, so nothing a broken file left open is reused.
Everything here is picklable: it travels to a process pool's or a Dask cluster's workers.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolize.batch.plan import PlannedProfile
from symbolize.cli.exits import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, error_line, internal_error_line
from symbolize.errors import SymbolizeError

if TYPE_CHECKING:
    from symbolize.api import Session
    from symbolize.remote.options import RemoteOptions


@dataclass(frozen=True)
class RewriteSettings:
    """What every profile of a batch is rewritten with: ``symbolize profile``'s options, read once
    by the command line. ``build_missing_indexes``: a missing index is built in the worker before
    it answers (``--background-index``, the default: the rest of the batch answers from it)."""

    binaries: tuple[Path, ...] = ()
    search_paths: tuple[Path, ...] = ()
    debug_dirs: tuple[Path, ...] | None = None
    demangle: str = "full"
    adjust_return_addresses: bool = True
    cache_dir: Path | None = None
    use_cache: bool = True
    build_missing_indexes: bool = True
    drop_frames: str | None = None
    keep_hashes: bool = False
    remote: RemoteOptions | None = None
    unnamed_above: float | None = None
    require_verified: bool = False
    # The shared index store (``--index-store``), set in each worker (symbolize/batch/tiers.py).
    index_store: str | None = None

    def session(self) -> Session:
        """A session with these options whose loader stays open until closed. Raises SymbolizeError
        for a binary, search path or debug directory that is not there."""
        from symbolize.api import Session

        return Session(
            binaries=self.binaries, search_paths=self.search_paths, debug_dirs=self.debug_dirs,
            cache_dir=self.cache_dir, use_cache=self.use_cache, background_index=False,
            demangle=self.demangle,  # type: ignore[arg-type]  # one of the declared choices
            remote=self.remote, keep_loader=True, build_missing_indexes=self.build_missing_indexes,
        )  # fmt: skip


@dataclass(frozen=True)
class ProfileOutcome:
    """How one profile went: its summary (``Summary.to_json()``) and the gates it tripped, or the
    one error line it failed with. ``exit_code`` is what ``symbolize profile`` would have exited with."""

    in_path: Path
    out_path: Path
    seconds: float
    exit_code: int
    summary: dict[str, Any] | None = None
    error: str | None = None
    gates: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return self.error is not None

    def line(self) -> str:
        """One line for stderr: what was written and how much was named, or the error."""
        if self.error is not None:
            return self.error
        summary = self.summary or {}
        gates = f"; gates: {', '.join(self.gates)}" if self.gates else ""
        named = f"{summary.get('named', 0)}/{summary.get('locations', 0)} locations named"
        return f"{self.in_path} -> {self.out_path}: {named}{gates}"


def failed_outcome(planned: PlannedProfile, message: str, exit_code: int, seconds: float = 0.0) -> ProfileOutcome:
    """``planned`` failed with ``message``, one line naming the input (``symbolize: error: IN: ...``)."""
    text = message.removeprefix("symbolize: error: ")
    if not text.startswith(str(planned.in_path)):
        text = f"{planned.in_path}: {text}"
    return ProfileOutcome(planned.in_path, planned.out_path, seconds, exit_code, error=f"symbolize: error: {text}")


def rewrite_one(planned: PlannedProfile, settings: RewriteSettings, session: Session) -> ProfileOutcome:
    """``planned`` rewritten as ``symbolize profile IN -o OUT`` with ``settings`` rewrites it, in ``session``."""
    from symbolize.api import symbolize_file
    from symbolize.cli.profile_command import gate_exit_code

    started = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            summary = symbolize_file(
                planned.in_path,
                planned.out_path,
                demangle=settings.demangle,  # type: ignore[arg-type]  # one of the declared choices
                adjust_return_addresses=settings.adjust_return_addresses,
                drop_frames=settings.drop_frames,
                keep_hashes=settings.keep_hashes,
                session=session,
            )
    except (SymbolizeError, OSError) as exc:
        return failed_outcome(planned, error_line(exc), EXIT_INPUT_ERROR, time.perf_counter() - started)
    except Exception as exc:  # a bug, or an input that found one: this profile's, not the batch's
        return failed_outcome(planned, internal_error_line(exc), EXIT_INTERNAL_ERROR, time.perf_counter() - started)
    failures = summary.check_gates(unnamed_above=settings.unnamed_above, require_verified=settings.require_verified)
    return ProfileOutcome(
        planned.in_path,
        planned.out_path,
        time.perf_counter() - started,
        gate_exit_code(failures),
        summary=summary.to_json(),
        gates=tuple(dict.fromkeys(failure.gate for failure in failures)),
        warnings=tuple(f"symbolize: warning: {warning.message}" for warning in caught),
    )


def rewrite_shard(
    profiles: Sequence[PlannedProfile],
    settings: RewriteSettings,
    report: Callable[[ProfileOutcome], None] | None = None,
) -> list[ProfileOutcome]:
    """Every profile of a shard in turn (module docstring); each outcome also to ``report`` as it comes."""
    outcomes: list[ProfileOutcome] = []
    for outcome in iter_shard(profiles, settings):
        outcomes.append(outcome)
        if report is not None:
            report(outcome)
    return outcomes


def iter_shard(profiles: Sequence[PlannedProfile], settings: RewriteSettings) -> Iterator[ProfileOutcome]:
    """The outcome of each profile of a shard, in its order, as each is done."""
    from symbolize.batch.tiers import use_index_store

    use_index_store(settings.index_store)
    session = settings.session()
    key: str | None = None
    try:
        for planned in profiles:
            if planned.key != key:
                session.close()  # one key's files open at a time: a worker's memory stays bounded
                key = planned.key
            outcome = rewrite_one(planned, settings, session)
            if outcome.failed:
                session.close()
                key = None
            yield outcome
    finally:
        session.close()
