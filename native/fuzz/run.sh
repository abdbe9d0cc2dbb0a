#!/usr/bin/env bash
# Build the cargo-fuzz targets of the compiled kernels on the stable toolchain (cargo-fuzz's own
# instrumentation flags, without its -Zsanitizer, which needs nightly: the crate forbids unsafe)
# and run one: native/fuzz/run.sh dwarf_units SECONDS. Seeds: the template's own sections.
# Where cargo-fuzz is installed, `RUSTC_BOOTSTRAP=1 cargo fuzz run dwarf_units -s none` runs the same.
set -euo pipefail
cd "$(dirname "$0")"
target="${1:-dwarf_units}"
seconds="${2:-20}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# An explicit target keeps the instrumentation flags off build scripts, as cargo-fuzz does.
host="$(rustc -vV | sed -n 's/^host: //p')"
RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
  cargo build --release --quiet --bin "$target" --target "$host"
corpus="$(mktemp -d)"
artifacts="$(mktemp -d)"
template="${DWARF_TEMPLATE:-../../fixtures/bin/cppdemo-gcc-dwarf5-pie}"
selector=0
for name in .debug_info .debug_abbrev .debug_line .debug_str .debug_line_str .debug_str_offsets .debug_addr \
            .debug_ranges .debug_rnglists; do
  if objcopy --dump-section "$name=$corpus/section" "$template" "$corpus/copy" 2>/dev/null && [ -s "$corpus/section" ]; then
    { printf "\\x$(printf %02x "$selector")"; cat "$corpus/section"; } >"$corpus/seed-$selector"
  fi
  rm -f "$corpus/section" "$corpus/copy"
  selector=$((selector + 1))
done
set +e
"$CARGO_TARGET_DIR/$host/release/$target" -max_total_time="$seconds" -artifact_prefix="$artifacts/" "$corpus" 2>&1 \
  | grep -E "^(#[0-9]+ +DONE|Done|==|.*panicked|.*SUMMARY)"
status=${PIPESTATUS[0]}
set -e
if compgen -G "$artifacts/*" >/dev/null; then
  echo "fuzz: $target found an input that panics: $(ls "$artifacts")" >&2
  exit 1
fi
exit "$status"
