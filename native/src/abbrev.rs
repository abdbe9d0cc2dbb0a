//! Where an abbreviation table (DWARF 5, 7.5.3) ends, for `formats/dwarf/abbrev.py`'s
//! `lazy_abbrev_table`: every open walks each unit's table to its end (the bytes the tables span
//! bound what they may cost), and in Python that walk builds every entry (+11 % of a cold 1k
//! lookup's instructions on libpython, +8 % on cppcheck). The numbers are gimli's LEB128 readers;
//! gimli's own table parser neither says where a table ends nor keeps the last entry of a repeated
//! code, as the reference `_parse_abbrev_table` does.
//!
//! The walk returns None wherever the reference might read the table otherwise (a table that runs
//! off the section, a number gimli refuses: past 64 bits, or padded past ten bytes): the reference
//! then parses it whole, and raises what it raises.

use gimli::{leb128, EndianSlice, LittleEndian, Reader};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Where the table at `offset` ends (past its 0 code), and where the last entry of code `code`
/// starts after its code (None: the table has none), without building it.
#[pyfunction]
pub fn abbrev_table_extent(data: &Bound<'_, PyAny>, offset: u64, code: u64) -> Option<(u64, Option<u64>)> {
    // A section held as another buffer (a memoryview) is left to the reference.
    let bytes = data.cast::<PyBytes>().ok()?.as_bytes();
    let mut input = EndianSlice::new(bytes.get(usize::try_from(offset).ok()?..)?, LittleEndian);
    let mut found = None;
    loop {
        let entry_code = leb128::read::unsigned(&mut input).ok()?;
        let at = (bytes.len() - input.len()) as u64;
        if entry_code == 0 {
            return Some((at, found));
        }
        if entry_code == code {
            found = Some(at);
        }
        leb128::read::unsigned(&mut input).ok()?; // the tag
        input.read_u8().ok()?; // has children
        loop {
            let (attribute, form) = (leb128::read::unsigned(&mut input).ok()?, leb128::read::unsigned(&mut input).ok()?);
            if (attribute, form) == (0, 0) {
                break;
            }
            if form == u64::from(gimli::DW_FORM_implicit_const.0) {
                leb128::read::signed(&mut input).ok()?;
            }
        }
    }
}
