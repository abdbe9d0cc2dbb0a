#!/usr/bin/env bash
# A fixed-budget run of every fuzz target (fuzz/README.md), for CI: FUZZ_SECONDS each (20 by
# default). Skipped, saying so, where atheris cannot be installed; a finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-20}"
if ! python -c "import atheris" 2>/dev/null; then
  echo "fuzz: atheris is not installed; fuzz targets skipped" >&2
  exit 0
fi
artifacts="$(mktemp -d)"
for target in "fuzz_object.py elf" "fuzz_object.py macho" "fuzz_object.py pe" "fuzz_profile.py pprof" \
              "fuzz_profile.py gperftools-cpu" "fuzz_profile.py gperftools-heap" "fuzz_pdb.py" \
              "fuzz_compiled_dwarf.py" "fuzz_compiled_lazy.py" "fuzz_cab.py"; do
  # shellcheck disable=SC2086
  set +e  # the target's own status is checked below, after its findings are named
  python fuzz/$target -max_total_time="$seconds" -artifact_prefix="$artifacts/" "$(mktemp -d)" 2>&1 \
    | grep -E "^(#[0-9]+ +DONE|Done|==|.*Error|.*Traceback)"
  status=${PIPESTATUS[0]}
  set -e
  if compgen -G "$artifacts/*" >/dev/null; then
    echo "fuzz: $target found an input outside the contract: $(ls "$artifacts")" >&2
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $target exited with status $status" >&2
    exit 1
  fi
done
