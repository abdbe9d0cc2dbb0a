"""A batch run's figures: profiles per second, locations named, and what the index tiers did.

The tiers' counts (hits and misses of the local cache and of the index store, bytes fetched) are
the index store's own (symbolize/index_store/), read in each worker around its shard and added up
here; a run without that package reports none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    # Tier name -> counter name -> count, as the index store reports them (module docstring).
    index_tiers: dict[str, dict[str, int]] = field(default_factory=dict)

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

    def add_tiers(self, tiers: Mapping[str, Mapping[str, int]]) -> None:
        for tier, counters in tiers.items():
            mine = self.index_tiers.setdefault(tier, {})
            for name, value in counters.items():
                mine[name] = mine.get(name, 0) + int(value)

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
            "index_tiers": {tier: dict(counters) for tier, counters in self.index_tiers.items()},
        }

    def format_text(self) -> str:
        lines = [
            f"batch: {self.profiles - self.failed}/{self.profiles} profiles rewritten, {self.failed} failed, "
            f"in {self.seconds:.2f} s ({self.profiles_per_second:.2f} profiles/s, {self.workers} workers, "
            f"{self.scheduler}); {self.named}/{self.locations} locations named"
        ]
        for tier, counters in self.index_tiers.items():
            counts = ", ".join(f"{name} {value}" for name, value in counters.items())
            lines.append(f"index {tier}: {counts}")
        return "\n".join(lines)
