#!/usr/bin/env bash
# Build the large benchmark binary: generated C++ (bench/gen_large.py), -O2 -g, into bench/work/large.
# Environment: CXX (default g++), JOBS (default 2), PYTHON (default python3).
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work_dir="${bench_dir}/work"
src_dir="${work_dir}/large_src"
cxx="${CXX:-g++}"
jobs="${JOBS:-2}"

mkdir -p "${work_dir}"
"${PYTHON:-python3}" "${bench_dir}/gen_large.py" "${src_dir}"

# The prefix map keeps build paths out of the DWARF so the binary does not depend on the checkout.
flags="-O2 -g -ffile-prefix-map=${src_dir}=/large_src"
stamp="${src_dir}/build_flags"
if [[ ! -f "${stamp}" || "$(cat "${stamp}")" != "${cxx} ${flags}" ]]; then
    echo "${cxx} ${flags}" >"${stamp}"
fi
make -C "${src_dir}" -j"${jobs}" CXX="${cxx}" CXXFLAGS="${flags}" OUT="${work_dir}/large"

echo "built ${work_dir}/large"
if command -v size >/dev/null; then
    size -A "${work_dir}/large" | awk '/^\.debug_/ { total += $2 } END { printf "DWARF sections: %.1f MB\n", total / 1e6 }'
fi
