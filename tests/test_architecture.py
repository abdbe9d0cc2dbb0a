"""The layering of ``symbolize/`` and ``formats/``, read from the source tree with ``ast``.

``formats/`` is installed as ``symbolize.formats`` (pyproject.toml's package-dir), so it is read
here as that package, without importing anything. Every import counts, also one inside a function
or under ``TYPE_CHECKING``. The rules:

1. No import cycle between modules. A package's ``__init__`` importing its own submodules (to
   re-export them) is no edge, and ``from package import name`` leads to the submodule the
   ``__init__`` took ``name`` from: a module importing a sibling that imports it back is a cycle,
   a package re-exporting its parts is not.
2. Nothing in ``formats/`` imports from ``symbolize/`` outside ``symbolize.formats``.
3. No ``getattr``/``hasattr`` with a literal public attribute name in ``symbolize/``: a capability
   a caller needs is declared (``formats/types.py``), so mypy checks it. A name held in a variable
   (``getattr(module, name)``) is no probe of a capability and passes; so does a private or dunder
   name. A platform probe is written as a ``sys.platform`` check.
4. No ``isinstance``/``issubclass`` against a concrete reader (a class of ``formats/`` deriving
   from ``ReaderDefaults``) in ``symbolize/``, outside the locator module of that reader's format.
5. No symlink in the tree (a checkout with symlinks off, Git for Windows' default, must build),
   and every package of the tree is installed (pyproject.toml names them, since ``formats/``'s
   cannot be found by package discovery under their installed names).
6. No object or debug file opened outside the loader (``symbolize/loader.py``) and ``formats/``
   (the readers it hands paths and bytes to). Opening is: constructing a reader or calling a
   ``formats/`` opener (``open_object``, ...), and, for modules outside the allowlist below,
   ``open``/``os.open``/``io.open``/``os.fdopen``/``mmap.mmap``, any ``.open(...)`` call,
   ``read_bytes``/``read_text``. Asking the loader (``loader.open(...)``, a receiver whose name
   says ``loader``) is no opening.

   The allowlist (modules that open files that are no object or debug file, with the primitives
   above only, never a reader):

   - ``symbolize/pprof.py``: reads the profile given and writes the rewritten one.
   - ``symbolize/profiles/*``: gperftools' own profile formats, read from the profile's bytes.
   - ``symbolize/tempfiles.py``: the temporary file an output is written to before it replaces
     the target.
   - ``symbolize/cache.py``, ``symbolize/index/*``: the index files (``.idx``), their lock,
     markers and the background indexer's log in the cache directory.
   - ``symbolize/audit/cargo/*``: Cargo.toml and ``.cargo/config.toml``, which predict a build's
     debug info.
   - ``symbolize/cli/*``: the command line's inputs and outputs (a profile or addresses read from
     a file or stdin, ``-o``); objects given on the command line are opened through the API.

   Hashing a file for its identity, reading a ``.gnu_debuglink`` CRC, or reading a debug map's
   object is opening it: that is the loader's (or a reader's) work.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from tests.fixtures_data import ROOT

# Directory in the checkout -> the package it is installed as.
PACKAGE_ROOTS = {"symbolize": "symbolize", "formats": "symbolize.formats"}
FORMATS = "symbolize.formats"
LOADER = "symbolize.loader"

# Rule 4: the locator module of each format's readers (by the formats/ subpackage defining them).
LOCATOR_OF_FORMAT = {
    "elf": "symbolize.discovery.elf_locators",
    "macho": "symbolize.discovery.macho_locators",
    "pdb": "symbolize.discovery.pdb_locator",
    "pe": "symbolize.discovery.pdb_locator",
}
# Rule 6: see the module docstring.
OPENS_OTHER_FILES = (
    "symbolize.pprof",
    "symbolize.profiles",
    "symbolize.tempfiles",
    "symbolize.cache",
    "symbolize.index",
    "symbolize.audit.cargo",
    "symbolize.audit.distro",  # dpkg's file lists, to name a distribution file's package
    "symbolize.cli",
    "symbolize.remote.store",  # writes downloads into the store (the loader opens them, verified)
    "symbolize.index_store",  # index files to and from a shared store, checked as the cache's are
)
# Functions of formats/ that open an object or debug file by its path (rule 6).
FORMATS_OPENERS = frozenset({"open_object", "list_slices", "open_pdb", "open_archive_member"})
FILE_PRIMITIVES = frozenset({"open", "fdopen", "mmap"})
READ_METHODS = frozenset({"read_bytes", "read_text"})


@dataclass(frozen=True)
class SourceModule:
    name: str
    path: Path
    is_package: bool
    checkout: Path
    tree: ast.Module = field(compare=False, repr=False)

    @property
    def relative(self) -> str:
        return self.path.relative_to(self.checkout).as_posix()


def source_modules(checkout: Path = ROOT) -> dict[str, SourceModule]:
    """Every module of the tree by its installed name (symlinked directories are not followed)."""
    modules: dict[str, SourceModule] = {}
    for directory, package in PACKAGE_ROOTS.items():
        root = checkout / directory
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(name for name in subfolders if not (Path(folder) / name).is_symlink())
            for file in sorted(files):
                path = Path(folder) / file
                if path.suffix != ".py" or path.is_symlink():
                    continue
                parts = list(path.relative_to(root).with_suffix("").parts)
                is_package = parts[-1] == "__init__"
                if is_package:
                    parts.pop()
                name = ".".join([package, *parts])
                modules[name] = SourceModule(name, path, is_package, checkout, ast.parse(path.read_bytes(), str(path)))
    return modules


@cache
def tree_modules() -> dict[str, SourceModule]:
    return source_modules()


def in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def is_formats(name: str) -> bool:
    return in_package(name, FORMATS)


@dataclass(frozen=True)
class Import:
    source: str
    line: int
    target: str  # the module of the tree it leads to, or the outside module as written


def _absolute(module: SourceModule, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _raw_imports(module: SourceModule) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) for every import anywhere in ``module``; name is None for ``import m``."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                yield node.lineno, base, alias.name


def _reexports(modules: dict[str, SourceModule], package: str) -> dict[str, str]:
    """Names a package's ``__init__`` takes from modules of the tree: name -> that module."""
    taken: dict[str, str] = {}
    for _, base, name in _raw_imports(modules[package]):
        if name is not None and base in modules:
            taken[name] = f"{base}.{name}" if f"{base}.{name}" in modules else base
    return taken


def imports(modules: dict[str, SourceModule]) -> list[Import]:
    """Every import of the tree, each resolved to the module it leads to."""
    reexports = {name: _reexports(modules, name) for name, module in modules.items() if module.is_package}

    def resolve(base: str, name: str | None) -> str:
        if name is None:
            return base
        if f"{base}.{name}" in modules:
            return f"{base}.{name}"
        seen: set[str] = set()
        while base in reexports and name in reexports[base] and base not in seen:
            seen.add(base)
            target = reexports[base][name]
            if target == base or (target in modules and not modules[target].is_package):
                return target
            base = target
        return base

    found = []
    for module in modules.values():
        for line, base, name in sorted(_raw_imports(module), key=lambda found: found[0]):
            found.append(Import(module.name, line, resolve(base, name)))
    return found


def dependency_edges(modules: dict[str, SourceModule]) -> dict[tuple[str, str], list[int]]:
    """(importer, imported) -> lines, between modules of the tree; a package's own parts are no edge."""
    edges: dict[tuple[str, str], list[int]] = {}
    for found in imports(modules):
        if found.target not in modules or found.target == found.source:
            continue
        if modules[found.source].is_package and in_package(found.target, found.source):
            continue
        edges.setdefault((found.source, found.target), []).append(found.line)
    return edges


def strongly_connected(nodes: list[str], edges: dict[tuple[str, str], list[int]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, each sorted."""
    successors: dict[str, list[str]] = {node: [] for node in nodes}
    for source, target in edges:
        successors[source].append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(successors[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def cycle_offenders(modules: dict[str, SourceModule]) -> list[str]:
    edges = dependency_edges(modules)
    offenders = []
    for component in strongly_connected(sorted(modules), edges):
        members = set(component)
        arrows = [f"    {modules[source].relative}:{','.join(map(str, sorted(set(lines))))} imports {target}"
                  for (source, target), lines in sorted(edges.items()) if source in members and target in members]
        offenders.append(f"cycle through {', '.join(component)}:\n" + "\n".join(arrows))
    return offenders


def upward_offenders(modules: dict[str, SourceModule]) -> list[str]:
    return [f"{modules[found.source].relative}:{found.line} imports {found.target}"
            for found in imports(modules)
            if is_formats(found.source) and in_package(found.target, "symbolize") and not is_formats(found.target)]


def _calls(module: SourceModule) -> list[ast.Call]:
    calls = [node for node in ast.walk(module.tree) if isinstance(node, ast.Call)]
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))


def _last_name(expression: ast.expr) -> str | None:
    """``x`` for ``x`` and for ``a.b.x``."""
    if isinstance(expression, ast.Name):
        return expression.id
    if isinstance(expression, ast.Attribute):
        return expression.attr
    return None


def _called_name(call: ast.Call) -> str | None:
    return _last_name(call.func)


def probe_offenders(modules: dict[str, SourceModule]) -> list[str]:
    offenders = []
    for module in modules.values():
        if is_formats(module.name):
            continue
        for call in _calls(module):
            if not (isinstance(call.func, ast.Name) and call.func.id in ("getattr", "hasattr") and len(call.args) >= 2):
                continue
            attribute = call.args[1]
            if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str) \
                    and not attribute.value.startswith("_"):
                offenders.append(f"{module.relative}:{call.lineno} {ast.unparse(call)}")
    return offenders


def concrete_readers(modules: dict[str, SourceModule]) -> dict[str, str]:
    """Classes of formats/ deriving from ReaderDefaults: name -> the formats/ subpackage defining it."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for module in modules.values():
        if not is_formats(module.name):
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                bases = [base.id if isinstance(base, ast.Name) else base.attr
                         for base in node.bases if isinstance(base, ast.Name | ast.Attribute)]
                subpackage = module.name.removeprefix(FORMATS + ".").split(".")[0]
                classes[node.name] = (subpackage, bases)

    def derives(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name not in classes or name in seen:
            return False
        return any(base == "ReaderDefaults" or derives(base, seen | {name}) for base in classes[name][1])

    return {name: subpackage for name, (subpackage, _) in classes.items() if derives(name)}


def isinstance_offenders(modules: dict[str, SourceModule]) -> list[str]:
    readers = concrete_readers(modules)
    offenders = []
    for module in modules.values():
        if is_formats(module.name):
            continue
        for call in _calls(module):
            if _called_name(call) not in ("isinstance", "issubclass") or len(call.args) != 2:
                continue
            kinds = call.args[1].elts if isinstance(call.args[1], ast.Tuple) else [call.args[1]]
            for kind in kinds:
                name = _last_name(kind)
                if name in readers and LOCATOR_OF_FORMAT.get(readers[name]) != module.name:
                    offenders.append(f"{module.relative}:{call.lineno} {ast.unparse(call)}")
    return offenders


def symlink_offenders(checkout: Path = ROOT) -> list[str]:
    """Symlinks git tracks, and any under the package directories or tests/."""
    offenders = set()
    git = shutil.which("git")
    if git is not None and (checkout / ".git").exists():
        listed = subprocess.run([git, "ls-files", "-s", "-z"], cwd=checkout, capture_output=True, check=True)
        for entry in listed.stdout.split(b"\0"):
            if entry.startswith(b"120000 "):
                offenders.add(entry.split(b"\t", 1)[1].decode())
    for directory in [*PACKAGE_ROOTS, "tests"]:
        for folder, subfolders, files in os.walk(checkout / directory):
            for name in [*subfolders, *files]:
                if (Path(folder) / name).is_symlink():
                    offenders.add((Path(folder) / name).relative_to(checkout).as_posix())
    return sorted(offenders)


def _formats_openers(modules: dict[str, SourceModule]) -> frozenset[str]:
    return FORMATS_OPENERS | frozenset(concrete_readers(modules))


def _is_the_loader(call: ast.Call) -> bool:
    """``loader.open(...)``, ``self.loader.open(...)``: asking the loader, which is no opening."""
    if not isinstance(call.func, ast.Attribute):
        return False
    return "loader" in (_last_name(call.func.value) or "").lower()


def open_offenders(modules: dict[str, SourceModule]) -> list[str]:
    openers = _formats_openers(modules)
    offenders = []
    for module in modules.values():
        if is_formats(module.name) or module.name == LOADER:
            continue
        other_files = any(in_package(module.name, allowed) for allowed in OPENS_OTHER_FILES)
        for call in _calls(module):
            name = _called_name(call)
            if name == "open" and _is_the_loader(call):
                continue
            if name in openers:
                offenders.append(f"{module.relative}:{call.lineno} {ast.unparse(call.func)}(...) opens an object file")
            elif not other_files and (name in READ_METHODS or name in FILE_PRIMITIVES):
                offenders.append(f"{module.relative}:{call.lineno} {ast.unparse(call.func)}(...)")
    return offenders


def uninstalled_packages(modules: dict[str, SourceModule]) -> tuple[list[str], list[str]]:
    """(packages of the tree that pyproject.toml does not install, listed ones that are not in the tree)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    present = {name for name, module in modules.items() if module.is_package}
    return sorted(present - listed), sorted(listed - present)


def _failure(rule: str, offenders: list[str]) -> str:
    return f"{rule}: {len(offenders)} offender(s)\n" + "\n".join(offenders)


def test_no_import_cycle() -> None:
    offenders = cycle_offenders(tree_modules())
    assert not offenders, _failure("import cycles (rule 1)", offenders)


def test_formats_imports_nothing_above_it() -> None:
    offenders = upward_offenders(tree_modules())
    assert not offenders, _failure("formats/ importing symbolize/ (rule 2)", offenders)


def test_no_probe_of_an_undeclared_capability() -> None:
    offenders = probe_offenders(tree_modules())
    assert not offenders, _failure("getattr/hasattr with a literal public name (rule 3)", offenders)


def test_concrete_readers_are_tested_only_by_their_locators() -> None:
    offenders = isinstance_offenders(tree_modules())
    assert not offenders, _failure("isinstance against a concrete reader outside its locator (rule 4)", offenders)


def test_no_symlink_in_the_tree() -> None:
    offenders = symlink_offenders()
    assert not offenders, _failure("symlinks (rule 5)", offenders)


def test_every_package_is_installed() -> None:
    missing, stale = uninstalled_packages(tree_modules())
    assert (missing, stale) == ([], []), f"pyproject.toml's packages: missing {missing}, not in the tree {stale}"


def test_only_the_loader_opens_object_files() -> None:
    offenders = open_offenders(tree_modules())
    assert not offenders, _failure("files opened outside the loader and formats/ (rule 6)", offenders)


# --- the checks themselves, on small trees that break each rule -------------------------------


def _tree(root: Path, files: dict[str, str]) -> dict[str, SourceModule]:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return source_modules(root)


BASE = {"symbolize/__init__.py": "", "formats/__init__.py": "", "formats/types.py": "class ReaderDefaults: ...\n",
        "formats/elf/__init__.py": "from .file import ElfFile\n",
        "formats/elf/file.py": "from symbolize.formats.types import ReaderDefaults\n"
                               "class ElfFile(ReaderDefaults): ...\n",
        "symbolize/discovery/__init__.py": "",
        "symbolize/discovery/elf_locators.py": "from symbolize.formats.elf import ElfFile\n"
                                               "def f(x): return isinstance(x, ElfFile)\n"}


def test_the_checks_pass_a_clean_tree(tmp_path: Path) -> None:
    modules = _tree(tmp_path, BASE)
    assert set(modules) >= {"symbolize.formats.elf.file", "symbolize.discovery.elf_locators"}
    assert cycle_offenders(modules) == upward_offenders(modules) == probe_offenders(modules) == []
    assert isinstance_offenders(modules) == open_offenders(modules) == []


@pytest.mark.parametrize(("files", "check", "expected"), [
    ({"symbolize/a.py": "def f():\n    from symbolize import b\n",
      "symbolize/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from symbolize.a import f\n"},
     cycle_offenders, "cycle through symbolize.a, symbolize.b"),
    # Through a package's re-export: a -> pkg (re-exporting b) -> b -> a.
    ({"symbolize/pkg/__init__.py": "from .b import B\n", "symbolize/pkg/b.py": "from ..a import A\nB = 1\n",
      "symbolize/a.py": "from symbolize.pkg import B\nA = 1\n"},
     cycle_offenders, "cycle through symbolize.a, symbolize.pkg.b"),
    ({"formats/elf/hints.py": "def f():\n    from symbolize.discovery import elf_locators\n"},
     upward_offenders, "formats/elf/hints.py:2 imports symbolize.discovery.elf_locators"),
    ({"symbolize/rewrite.py": "def f(x): return getattr(x, 'universal', False) or hasattr(x, '_private')\n"},
     probe_offenders, "symbolize/rewrite.py:1 getattr(x, 'universal', False)"),
    ({"symbolize/normalize.py": "from symbolize.formats import elf\n"
                                "def f(x): return isinstance(x, (int, elf.ElfFile))\n"},
     isinstance_offenders, "symbolize/normalize.py:2 isinstance(x, (int, elf.ElfFile))"),
    ({"symbolize/module.py": "from symbolize.formats.elf import ElfFile\ndef f(p): return ElfFile(p)\n"},
     open_offenders, "symbolize/module.py:2 ElfFile(...) opens an object file"),
    ({"symbolize/discovery/paths.py": "def f(p): return p.read_bytes()\n"},
     open_offenders, "symbolize/discovery/paths.py:1 p.read_bytes(...)"),
    ({"symbolize/discovery/modules.py": "def f(options, loader, p): return loader.open(p), options.open(p)\n"},
     open_offenders, "symbolize/discovery/modules.py:1 options.open(...)"),
])
def test_the_checks_find_what_breaks_a_rule(tmp_path: Path, files: dict[str, str], check: object,
                                            expected: str) -> None:
    modules = _tree(tmp_path, {**BASE, **files})
    assert callable(check)
    found = check(modules)
    assert any(expected in offender for offender in found), found
    # The allowlisted modules may open their own files, never an object file.
    allowed = _tree(tmp_path / "allowed", {**BASE, "symbolize/pprof.py": "def f(p): return open(p)\n"})
    assert open_offenders(allowed) == []


def test_the_symlink_check_finds_a_link(tmp_path: Path) -> None:
    (tmp_path / "symbolize").mkdir()
    (tmp_path / "formats").mkdir()
    (tmp_path / "symbolize" / "formats").symlink_to("../formats")
    assert symlink_offenders(tmp_path) == ["symbolize/formats"]
