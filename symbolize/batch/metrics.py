"""A batch run's figures: profiles per second, locations named, and what the index tiers did.

The tiers' counts (hits and misses of the local cache, the fetched LRU and the index store;
indexes built and published; bytes fetched) are the index store's own (symbolize/batch/tiers.py),
taken in each worker process and added up here; a tree without the store reports none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from symbolize.batch.tiers import UNAVAILABLE
from symbolize.batch.worker import ProfileOutcome


@dataclass
class BatchMetrics:
    """Figures of one ``symbolize batch`` run (``to_json`` is the shape ``--json-summary`` prints)."""

    workers: int = 0
    scheduler: str = "local"
    seconds: float = 0.0
    profiles: int = 0
    failed: int = 0
    locations: int = 0
    named: int = 0
    # Counter name -> count, summed over the workers (module docstring), and why the store was given
    # up on, when a worker did.
    index: dict[str, int] = field(default_factory=dict)
    store_unavailable: str | None = None

    @property
    def profiles_per_second(self) -> float:
        return self.profiles / self.seconds if self.seconds > 0 else 0.0

    def count(self, outcomes: Iterable[ProfileOutcome]) -> None:
        for outcome in outcomes:
            self.profiles += 1
            if outcome.failed or outcome.summary is None:
                self.failed += 1
                continue
            self.locations += int(outcome.summary.get("locations", 0))
            self.named += int(outcome.summary.get("named", 0))

    def add_tiers(self, counts: Mapping[str, int | str]) -> None:
        """Add one worker process's counts (symbolize/batch/tiers.py's ``tier_counts``)."""
        for name, value in counts.items():
            if name == UNAVAILABLE or isinstance(value, str):
                self.store_unavailable = self.store_unavailable or str(value)
            else:
                self.index[name] = self.index.get(name, 0) + value

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "scheduler": self.scheduler,
            "seconds": round(self.seconds, 3),
            "profiles": self.profiles,
            "failed": self.failed,
            "profiles_per_second": round(self.profiles_per_second, 3),
            "locations": self.locations,
            "named": self.named,
            "index": dict(self.index),
            "store_unavailable": self.store_unavailable,
        }

    def format_text(self) -> str:
        lines = [
            f"batch: {self.profiles - self.failed}/{self.profiles} profiles rewritten, {self.failed} failed, "
            f"in {self.seconds:.2f} s ({self.profiles_per_second:.2f} profiles/s, {self.workers} workers, "
            f"{self.scheduler}); {self.named}/{self.locations} locations named"
        ]
        if self.index:
            tiers = "; ".join(
                f"{tier} {self.index.get(f'{tier}_hits', 0)} hits, {self.index.get(f'{tier}_misses', 0)} misses"
                for tier in ("local", "fetched", "store")
                if f"{tier}_hits" in self.index
            )
            lines.append(
                f"index: {tiers}; {self.index.get('built', 0)} built, {self.index.get('published', 0)} published; "
                f"{self.index.get('bytes_fetched', 0):,} bytes fetched"
            )
        if self.store_unavailable:
            lines.append(f"index store given up on: {self.store_unavailable}")
        return "\n".join(lines)
