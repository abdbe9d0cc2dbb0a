"""What the package declares matches what it is: its runtime dependencies are what its modules
import, and it ships its type hints (PEP 561)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from importlib.resources import files

from tests.fixtures_data import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
INSTALLED_TREES = (ROOT / "symbolize", ROOT / "formats")


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
    by_module = packages_distributions()
    third_party = {
        module: {_distribution_name(name) for name in by_module[module]}
        for module in _imported_top_level_modules()
        if module in by_module and module not in sys.stdlib_module_names and module != "symbolize"
    }
    undeclared = {module: names for module, names in third_party.items() if not names & declared}
    assert not undeclared, f"imported but not a dependency: {undeclared}"
    imported_distributions = set().union(*third_party.values())
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
