#!/usr/bin/env bash
# Build the PDB benchmark image: generated freestanding C++ (bench/gen_pdb.py) compiled by clang for
# x86_64-pc-windows-msvc (-O2, CodeView) and linked by lld-link /debug into bench/work/pdbgen.exe
# and bench/work/pdbgen.pdb (about 21 MB with the default 90 units). No Windows SDK or C runtime.
# Environment: JOBS (default 2), UNITS (default 90), FUNCTIONS (default 60), PYTHON (default python3).
# Objects are rebuilt only when their source changed, so a second run only relinks.
set -euo pipefail

bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work_dir="${bench_dir}/work"
src_dir="${work_dir}/pdbgen_src"
jobs="${JOBS:-2}"

mkdir -p "${work_dir}"
"${PYTHON:-python3}" "${bench_dir}/gen_pdb.py" "${src_dir}" --units "${UNITS:-90}" --functions "${FUNCTIONS:-60}"

# Reproducible: relative source names, a fixed Windows compilation directory, lld-link /Brepro.
windir='C:\bench\pdbgen'
cat >"${src_dir}/Makefile" <<MAKE
CXXFLAGS = --target=x86_64-pc-windows-msvc -g -gcodeview -O2 -c -fno-exceptions -fno-rtti \\
	-fno-stack-protector -ffreestanding -fno-builtin -fdebug-compilation-dir=${windir//\\/\\\\}
OBJECTS = \$(shell cat objects.txt)
../pdbgen.exe: \$(OBJECTS)
	lld-link /out:../pdbgen.exe /pdb:../pdbgen.pdb /debug /Brepro /nodefaultlib /entry:mainCRTStartup \\
		/subsystem:console '/pdbaltpath:C:\\build\\pdbgen.pdb' \$(OBJECTS)
%.obj: %.cpp common.h
	clang++ \$(CXXFLAGS) -o \$@ \$<
MAKE
nice -n 10 make -s -C "${src_dir}" -j"${jobs}"
echo "built ${work_dir}/pdbgen.exe ($(stat -c %s "${work_dir}/pdbgen.exe") bytes)" \
    "and ${work_dir}/pdbgen.pdb ($(stat -c %s "${work_dir}/pdbgen.pdb") bytes)"
