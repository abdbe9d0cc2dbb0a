"""The compiled skip tables (``native/src/skip_tables.rs``) against their Python reference,
``skip._skip_tables``: a ``SubtreeSkipper``'s five per-code lists (sizes in outer and inner walks,
children flags, variable steps, fixed tails).

Where the kernel returns None the skipper builds them in Python, so only the kernel's own answers
are compared: on every unit of every fixture (which it must decide itself), and on
hypothesis-changed abbreviations (any form, unknown and indirect ones included, scope, function
and other tags, children flags, implicit constants past 64 bits, codes past the dense range).
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
from symbolize.formats.dwarf.skip import SubtreeSkipper, _skip_tables
from symbolize.formats.dwarf.unit import Unit
from tests.kernel_twins import object_units
from tests.test_native_kernels import BIN, OBJECT_FILES

_kernels = pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")

FIXTURES = BIN.parent


def _assert_alike(unit: Unit) -> bool:
    """Whether the kernel decided (its tables then the reference's)."""
    compiled = _kernels.skip_tables(unit.abbrevs, *unit.encoding)
    if compiled is not None:
        assert compiled == _skip_tables(unit, None)
        assert compiled == _skip_tables(unit, {})
    return compiled is not None


@cache
def _units(path: Path) -> tuple[Unit, ...]:
    return tuple(object_units(path))


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_unit_skips_alike(path: Path) -> None:
    units = _units(path)
    if not units:
        pytest.skip("no DWARF units of its own")
    assert all([_assert_alike(unit) for unit in units])
    # And the skipper holds them.
    skipper = SubtreeSkipper(units[0])
    assert (skipper._outer_sizes, skipper._inner_sizes, skipper._children, skipper._steps,
            skipper._tails) == _skip_tables(units[0], None)


_FORMS = [value for name, value in vars(c).items() if name.startswith("DW_FORM_")] + [0x7F, 0x1F00, 1 << 64]
_TAGS = [c.DW_TAG_subprogram, c.DW_TAG_inlined_subroutine, c.DW_TAG_namespace, c.DW_TAG_structure_type,
         c.DW_TAG_class_type, c.DW_TAG_union_type, c.DW_TAG_enumeration_type, c.DW_TAG_lexical_block, 0x34, 1 << 64]
_ATTRIBUTES = [c.DW_AT_low_pc, c.DW_AT_ranges, c.DW_AT_name, c.DW_AT_high_pc, c.DW_AT_sibling, 0x2007, 1 << 70]
CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "cdemo-gcc-dwarf4-pie", "rustdemo-full")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_changed_abbreviations_skip_alike(data: st.DataObject, case: str) -> None:
    unit = data.draw(st.sampled_from(_units(BIN / case)))
    abbrevs = dict(unit.abbrevs)
    for _ in range(data.draw(st.integers(1, 6))):
        code = data.draw(st.one_of(st.sampled_from(sorted(abbrevs)), st.sampled_from([1 << 16, (1 << 16) - 1, 300])))
        abbrev = abbrevs.get(code) or next(iter(abbrevs.values()))
        attributes = list(abbrev.attributes)
        for _ in range(data.draw(st.integers(0, 3))):
            entry = (data.draw(st.sampled_from(_ATTRIBUTES)), data.draw(st.sampled_from(_FORMS)),
                     data.draw(st.sampled_from([0, 1, -1, (1 << 63) - 1, -(1 << 63), 1 << 63, 1 << 70])))
            if attributes and data.draw(st.booleans()):
                attributes[data.draw(st.integers(0, len(attributes) - 1))] = entry
            else:
                attributes.append(entry)
        abbrevs[code] = Abbrev(code, data.draw(st.sampled_from([abbrev.tag, *_TAGS])), data.draw(st.booleans()),
                               tuple(attributes))
    _assert_alike(replace(unit, abbrevs=abbrevs))
