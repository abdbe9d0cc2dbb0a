#!/usr/bin/env bash
# Build the generated Rust benchmark program (bench/gen_rust.py) with rustc -O2 -g, into bench/work/rustgen.
# rustc is called directly (no cargo): one crate, std only. Takes about 4 minutes on 2 cores.
# Environment: RUSTC (default rustc), PYTHON (default python3), MODULES (default: the generator's).
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work_dir="${bench_dir}/work"
src_dir="${work_dir}/rustgen_src"
rustc="${RUSTC:-rustc}"

mkdir -p "${work_dir}"
"${PYTHON:-python3}" "${bench_dir}/gen_rust.py" "${src_dir}" ${MODULES:+--modules "${MODULES}"}

out="${work_dir}/rustgen"
if [[ -f "${out}" && "${out}" -nt "${src_dir}/main.rs" ]]; then
    echo "up to date: ${out}"
else
    # The remap keeps the checkout path out of the DWARF, as -ffile-prefix-map does for the C++ builds.
    nice -n 10 "${rustc}" --edition 2021 -C opt-level=2 -C debuginfo=2 \
        --remap-path-prefix "${src_dir}=/rustgen_src" -o "${out}" "${src_dir}/main.rs"
    echo "built ${out}"
fi
if command -v size >/dev/null; then
    size -A "${out}" | awk '/^\.debug_/ { total += $2 } /^\.debug_info/ { info = $2 }
        END { printf "DWARF sections: %.1f MB (.debug_info %.1f MB)\n", total / 1e6, info / 1e6 }'
fi
