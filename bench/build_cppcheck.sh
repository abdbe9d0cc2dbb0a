#!/usr/bin/env bash
# Build cppcheck from its Debian source package with -O2 -g, into bench/work/cppcheck.
# Needs a deb-src entry for the running suite (e.g. "Types: deb-src" beside "Types: deb" in
# /etc/apt/sources.list.d/debian.sources) and `apt-get update`; `apt-get source` needs no root.
# Uses the upstream Makefile (no cmake, no match compiler, no PCRE rules): only the CLI binary.
# Environment: CXX (default g++), JOBS (default 2).
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work_dir="${bench_dir}/work"
fetch_dir="${work_dir}/cppcheck-src"
cxx="${CXX:-g++}"
jobs="${JOBS:-2}"

mkdir -p "${fetch_dir}"
src_dir="$(find "${fetch_dir}" -mindepth 1 -maxdepth 1 -type d -name 'cppcheck-*' | sort | tail -n 1)"
if [[ -z "${src_dir}" ]]; then
    if ! (cd "${fetch_dir}" && apt-get source cppcheck); then
        echo "error: 'apt-get source cppcheck' failed; add a deb-src entry and run apt-get update" >&2
        exit 1
    fi
    src_dir="$(find "${fetch_dir}" -mindepth 1 -maxdepth 1 -type d -name 'cppcheck-*' | sort | tail -n 1)"
fi
echo "source: ${src_dir}"

# The prefix map keeps the checkout path out of the DWARF; nice keeps a shared machine usable.
flags="-O2 -g -ffile-prefix-map=${src_dir}=/cppcheck"
nice -n 10 make -C "${src_dir}" -j"${jobs}" cppcheck \
    CXX="${cxx}" CXXFLAGS="${flags}" MATCHCOMPILER=no HAVE_RULES=no
cp "${src_dir}/cppcheck" "${work_dir}/cppcheck"

echo "built ${work_dir}/cppcheck"
if command -v size >/dev/null; then
    size -A "${work_dir}/cppcheck" | awk '/^\.debug_/ { total += $2 } END { printf "DWARF sections: %.1f MB\n", total / 1e6 }'
fi
