"""What the package declares matches what it is: its runtime dependencies are what its modules
import, it ships its type hints (PEP 561), and a checkout runs what was installed from it."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from importlib.resources import files
from pathlib import Path

import symbolize
from tests.fixtures_data import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
INSTALLED_TREES = (ROOT / "symbolize", ROOT / "formats")
# Extras whose modules the package imports only when a run asks for them (the ``store`` extra: an
# index store URL, symbolize/index_store/): not dependencies, but imported by installed code.
RUNTIME_EXTRAS = ("store", "scale")


def _distribution_name(requirement: str) -> str:
    """``pyelftools>=0.31`` -> ``pyelftools`` (PEP 503 normalised)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name is not None, requirement
    return re.sub(r"[-_.]+", "-", name.group()).lower()


def _imported_top_level_modules() -> set[str]:
    """Every top-level module the installed code imports (absolute imports, anywhere in a file)."""
    imported: set[str] = set()
    for tree in INSTALLED_TREES:
        for path in tree.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    imported.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    return imported


def test_runtime_dependencies_are_what_the_package_imports() -> None:
    declared = {_distribution_name(requirement) for requirement in PYPROJECT["project"]["dependencies"]}
    # An extra that a command needs only when asked (batch --dask: scale; --index-store URL: store) is
    # imported inside the function that runs it, and says which extra to install when it is missing.
    optional = {
        _distribution_name(requirement)
        for extra in RUNTIME_EXTRAS
        for requirement in PYPROJECT["project"]["optional-dependencies"][extra]
    }
    by_module = packages_distributions()
    third_party = {
        module: {_distribution_name(name) for name in by_module[module]}
        for module in _imported_top_level_modules()
        if module in by_module and module not in sys.stdlib_module_names and module != "symbolize"
    }
    undeclared = {module: names for module, names in third_party.items() if not names & (declared | optional)}
    assert not undeclared, f"imported but not a dependency: {undeclared}"
    imported_distributions = set().union(*third_party.values())
    unimported = optional - imported_distributions
    assert not unimported, f"runtime extras no installed module imports: {unimported}"
    unused = declared - imported_distributions
    assert not unused, f"dependencies no installed module imports (a test or tool extra instead?): {unused}"


def test_pyelftools_is_for_the_tests_only() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "pyelftools" not in {_distribution_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert "pyelftools" in {_distribution_name(r) for r in extras["test"]}


def test_the_package_ships_its_type_hints() -> None:
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["symbolize"]
    assert (ROOT / "symbolize" / "py.typed").is_file()
    assert files("symbolize").joinpath("py.typed").is_file()  # as installed


def _checkout_copy(tmp_path: Path) -> Path:
    """A source checkout's layout: ``symbolize/`` without ``formats/`` (only its __init__ matters)."""
    checkout = tmp_path / "checkout"
    (checkout / "symbolize").mkdir(parents=True)
    shutil.copy(ROOT / "symbolize" / "__init__.py", checkout / "symbolize" / "__init__.py")
    return checkout


def test_a_checkout_runs_the_installed_copy_with_its_kernels(tmp_path: Path) -> None:
    """``python -m symbolize`` in a checkout: the checkout's package has no formats/ and no kernels,
    the install has both (or maps them, editable): what runs is the install's, kernels as here."""
    code = "import symbolize, symbolize.cli.entry as e; print(symbolize.native_status()); print(e.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=_checkout_copy(tmp_path), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    status, entry = done.stdout.splitlines()
    assert status == symbolize.native_status()
    assert not Path(entry).is_relative_to(tmp_path)


def test_a_checkout_without_any_install_says_to_install(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-S", "-c", "import symbolize"], cwd=_checkout_copy(tmp_path),
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("ImportError: symbolize is imported from the source checkout ")
    assert "pip install ." in done.stderr
