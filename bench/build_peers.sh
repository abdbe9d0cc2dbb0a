#!/usr/bin/env bash
# Build the Rust peers bench/run.py times beside symbolize: gimli's addr2line (the `addr2line` crate's
# command) and blazesym's CLI (`blazecli`), from crates.io, into bench/work/peers/bin.
# About 3 + 6 minutes on 2 cores. Environment: ADDR2LINE_VERSION, BLAZECLI_VERSION (default: newest).
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${bench_dir}/work/peers"
mkdir -p "${root}"
nice -n 10 cargo install --root "${root}" addr2line --features bin ${ADDR2LINE_VERSION:+--version "${ADDR2LINE_VERSION}"}
nice -n 10 cargo install --root "${root}" blazecli ${BLAZECLI_VERSION:+--version "${BLAZECLI_VERSION}"}
"${root}/bin/addr2line" --version
"${root}/bin/blazecli" --version
