"""The compiled DIE walk (``native/src/die_walk.rs``) against its Python reference, ``scan._walk``.

``_kernels.walk_dies`` must leave a ``UnitIndex`` as ``_walk`` leaves it (nodes, their attribute
dicts in order, deferred subtrees, function ranges, scopes), or return False with nothing touched,
after which ``_walk`` runs and raises its own error. Checked on every unit of every fixture, lazily
and whole, each deferred subtree expanded, and on hypothesis-mutated fixture units (their DIE bytes
and their abbreviations), errors and messages included. Skipped where the kernels were not built
or ``SYMBOLIZE_PURE_PYTHON`` is set.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import Abbrev
from symbolize.formats.dwarf.scan import SharedTables, scan_unit
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.native import kernels
from tests.fixtures_data import FIXTURES
from tests.kernel_twins import RecordingWalk, index_state, object_units, scan_kernels, scan_outcome, with_info

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
OBJECT_FILES = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.read_bytes()[:4] in MAGICS)


def _assert_alike(unit: Unit) -> list[bool]:
    """Both sides on ``unit``, lazily and whole; what the kernel returned on each call."""
    returned = []
    for whole in (False, True):
        reference = scan_outcome(unit, whole, None)
        recording = RecordingWalk(kernels)
        compiled = scan_outcome(unit, whole, recording)
        assert compiled == reference
        returned += recording.returned
    return returned


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_unit_scans_alike(path: Path) -> None:
    units = object_units(path)
    if not units:
        pytest.skip("no DWARF units of its own")
    # rustc's files hold ~500 small units alike: 60 spread over the file keep CI's time down.
    units = units[:: max(1, len(units) // 60)]
    returned = [flag for unit in units for flag in _assert_alike(unit)]
    # The kernel walked every real unit itself.
    assert returned and all(returned)


MUTATED_CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "cdemo-gcc-dwarf4-pie", "rustdemo-full")


@cache
def _units(name: str) -> tuple[Unit, ...]:
    return tuple(object_units(FIXTURES / "bin" / name))


_FORMS = [value for name, value in vars(c).items() if name.startswith("DW_FORM_")] + [0x7F, 0x1F00]
_TAGS = [c.DW_TAG_subprogram, c.DW_TAG_inlined_subroutine, c.DW_TAG_namespace, c.DW_TAG_structure_type,
         c.DW_TAG_lexical_block, 0x34, c.DW_TAG_class_type]  # 0x34: DW_TAG_variable


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(MUTATED_CASES))
def test_mutated_fixture_units_scan_alike(data: st.DataObject, case: str) -> None:
    units = _units(case)
    if not units:
        pytest.skip(f"no fixture {case}")
    unit = data.draw(st.sampled_from(units))
    info = bytearray(unit.sections.info)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(unit.first_die, max(unit.end - 1, unit.first_die)))
        edit = data.draw(st.sampled_from(["byte", "zero", "high", "copy"]))
        if edit == "byte":
            info[at] = data.draw(st.integers(0, 255))
        elif edit == "zero":
            info[at] = 0
        elif edit == "high":
            info[at] |= 0x80
        else:
            source = data.draw(st.integers(unit.first_die, max(unit.end - 1, unit.first_die)))
            # Same length on both sides, so the unit keeps its size and later edits stay in it.
            length = min(data.draw(st.integers(1, 16)), len(info) - at, len(info) - source)
            info[at : at + length] = info[source : source + length]
    del info[data.draw(st.integers(unit.end - 8, unit.end)) if data.draw(st.booleans()) else len(info) :]
    mutated = with_info(unit, bytes(info))
    if data.draw(st.booleans()) and mutated.abbrevs:
        # An abbreviation changed: another form, tag or children flag.
        code = data.draw(st.sampled_from(sorted(mutated.abbrevs)))
        abbrev = mutated.abbrevs[code]
        attributes = list(abbrev.attributes)
        if attributes and data.draw(st.booleans()):
            position = data.draw(st.integers(0, len(attributes) - 1))
            attribute, _, _ = attributes[position]
            form = data.draw(st.sampled_from(_FORMS))
            implicit = data.draw(st.sampled_from([0, 1, -1, 1 << 63, 1 << 70]))
            attributes[position] = (attribute, form, implicit)
        mutated.abbrevs[code] = Abbrev(code, data.draw(st.sampled_from([abbrev.tag, *_TAGS])),
                                       data.draw(st.booleans()), tuple(attributes))
    _assert_alike(mutated)


def test_a_value_past_64_bits_is_left_to_the_reference() -> None:
    """An implicit constant of 2**70 (a second DW_AT_decl_line, which takes no bytes) is a Python int
    only the reference keeps."""
    unit = next(unit for unit in _units("cdemo-gcc-dwarf4-pie")
                if any(abbrev.tag == c.DW_TAG_subprogram for abbrev in unit.abbrevs.values()))
    changed = with_info(unit, unit.sections.info)
    for code, abbrev in unit.abbrevs.items():
        if abbrev.tag == c.DW_TAG_subprogram:
            attributes = (*abbrev.attributes, (c.DW_AT_decl_line, c.DW_FORM_implicit_const, 1 << 70))
            changed.abbrevs[code] = abbrev._replace(attributes=attributes)
    returned = _assert_alike(changed)
    assert False in returned
    outcome = scan_outcome(changed, True, None)
    assert outcome[0] == "scanned"
    node_attrs = outcome[1][6]
    assert any(dict(attributes).get(11) == (c.DW_FORM_implicit_const, 1 << 70) for attributes in node_attrs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(["cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf5-pie", "rustdemo-full"]))
def test_scope_names_from_damaged_string_sections_read_alike(data: st.DataObject, case: str) -> None:
    """Scope names are read by the kernel itself (.debug_str, .debug_line_str, string indexes):
    a name that is not UTF-8, loses its NUL, or lies past a section cut short reads as the
    reference reads it, or is handed to it (``Unit.string``), which raises its own error."""
    units = [unit for unit in _units(case) if any(abbrev.tag in (c.DW_TAG_namespace, c.DW_TAG_structure_type,
                                                                 c.DW_TAG_class_type)
                                                  for abbrev in unit.abbrevs.values())]
    if not units:
        pytest.skip(f"no fixture {case} with scopes")
    unit = data.draw(st.sampled_from(units))
    sections = unit.sections
    changed = {}
    for name in ("str", "line_str", "str_offsets"):
        section = bytearray(getattr(sections, name))
        if not section or not data.draw(st.booleans()):
            continue
        for _ in range(data.draw(st.integers(1, 12))):
            section[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.sampled_from([0x00, 0xFF, 0xC3, 0x80,
                                                                                              0x41]))
        if data.draw(st.booleans()):
            del section[data.draw(st.integers(0, len(section))):]
        changed[name] = bytes(section)
    mutated = replace(unit, sections=replace(sections, **changed), abbrevs=dict(unit.abbrevs))
    _assert_alike(mutated)


def _whole_with(shared: SharedTables, unit: Unit) -> tuple[object, ...]:
    with scan_kernels(kernels):
        try:
            return ("scanned", index_state(scan_unit(unit, True, shared)))
        except Exception as error:  # any type: the two sides must raise the same one
            return ("raised", type(error), str(error))


def _whole_reference(unit: Unit) -> tuple[object, ...]:
    with scan_kernels(None):
        try:
            return ("scanned", index_state(scan_unit(unit, True, SharedTables())))
        except Exception as error:
            return ("raised", type(error), str(error))


@pytest.mark.parametrize("case", MUTATED_CASES)
def test_one_plan_cache_across_a_files_tables_scans_alike(case: str) -> None:
    """The walk's plans are cached by abbreviation shape across a file's tables (the attributes
    tuple the parser shares, with tag, children flag and encoding): every unit scanned with one
    SharedTables reads as the reference reads it alone, and so do units whose abbreviations keep
    the same attributes tuple under another tag, children flag or DWARF version."""
    units = _units(case)
    if not units:
        pytest.skip(f"no fixture {case}")
    shared = SharedTables()
    for unit in units[:: max(1, len(units) // 40)]:
        assert _whole_with(shared, unit) == _whole_reference(unit)
    unit = units[0]
    tags = [c.DW_TAG_subprogram, c.DW_TAG_namespace, c.DW_TAG_lexical_block, 0x34]
    variants = [unit]
    for turn, tag in enumerate(tags):
        abbrevs = {code: Abbrev(code, tag if (code + turn) % 3 == 0 else abbrev.tag,
                                abbrev.has_children if code % 2 else not abbrev.has_children, abbrev.attributes)
                   for code, abbrev in unit.abbrevs.items()}
        variants.append(replace(unit, abbrevs=abbrevs))
    variants.append(replace(unit, version=2 if unit.version != 2 else 4, abbrevs=dict(unit.abbrevs)))
    for variant in variants:
        assert _whole_with(shared, variant) == _whole_reference(variant)
