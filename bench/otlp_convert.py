"""How long ``symbolize convert`` takes each way on a generated pprof profile of a given size.

    python bench/otlp_convert.py [--samples N] [--locations N] [--functions N] [--repeat N]

The profile (fixed seed: the same each run) has two sample types, 20 mappings, locations with one
to three lines, stacks of 12 locations and a string label on every other sample, the shape of a
native CPU profile after symbolization. Prints the best of ``--repeat`` wall-clock times of
pprof -> OTLP and OTLP -> pprof, protobuf and OTLP JSON, per sample, and checks the round trip is
exact. Timings are the machine's: run it on a quiet one before quoting them.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import partial

from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding
from symbolize.pprof import parse_profile
from symbolize.proto import profile_pb2 as pprof


def generated_profile(samples: int, locations: int, functions: int) -> pprof.Profile:
    chance = random.Random(25)
    profile = pprof.Profile(string_table=["", "samples", "count", "cpu", "nanoseconds", "thread"])
    profile.string_table.extend(f"name {index}" for index in range(max(functions, 64)))
    first_name = 6
    profile.sample_type.add(type=1, unit=2)
    profile.sample_type.add(type=3, unit=4)
    for mapping_id in range(1, 21):
        start = mapping_id << 32
        profile.mapping.add(id=mapping_id, memory_start=start, memory_limit=start + (1 << 30), filename=first_name)
    for function_id in range(1, functions + 1):
        profile.function.add(id=function_id, name=first_name + function_id % functions, filename=first_name)
    for location_id in range(1, locations + 1):
        mapping_id = location_id % 20 + 1
        address = (mapping_id << 32) + 16 * location_id
        location = profile.location.add(id=location_id, mapping_id=mapping_id, address=address)
        for _ in range(location_id % 3 + 1):
            location.line.add(function_id=chance.randint(1, functions), line=location_id % 900 + 1)
    for number in range(samples):
        sample = profile.sample.add(location_id=chance.sample(range(1, locations + 1), 12), value=[1, 10_000_000])
        if number % 2:
            sample.label.add(key=5, str=first_name + number % 7)
    return profile


def best_of(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--locations", type=int, default=50_000)
    parser.add_argument("--functions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    profile = generated_profile(args.samples, args.locations, args.functions)
    data = profile.SerializeToString()
    print(f"pprof: {args.samples} samples, {args.locations} locations, {args.functions} functions, {len(data)} bytes")
    for encoding in Encoding:
        otlp = convert(data, Target.OTLP, encoding=encoding).data
        back = convert(otlp, Target.PPROF).data
        exact = parse_profile(back)[0] == profile
        there = best_of(args.repeat, partial(convert, data, Target.OTLP, encoding=encoding))
        again = best_of(args.repeat, partial(convert, otlp, Target.PPROF))
        per_sample = 1e6 / args.samples
        there_text = f"to OTLP {there:.2f} s ({there * per_sample:.1f} us/sample)"
        again_text = f"back {again:.2f} s ({again * per_sample:.1f} us/sample)"
        print(f"{encoding.value:8}: {len(otlp)} bytes; {there_text}, {again_text}; exact: {exact}")


if __name__ == "__main__":
    main()
