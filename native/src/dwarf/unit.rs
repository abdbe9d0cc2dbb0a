//! One unit as the reference reader sees it (`formats/dwarf/unit.py`, `info.py` `_prepare_unit`,
//! `ranges.py`; DWARF 5, 7.5.1 and 2.17.3): gimli reads the header, the abbreviations and the
//! attribute values; this module decides what the values mean where the reference has its own
//! rule: the bases a root DIE sets, which forms name a string or an address, the unit's `low_pc`,
//! and the exact arithmetic of range lists.
//!
//! Range lists are walked here over gimli's byte reader rather than with its `RawRngListIter`:
//! that iterator ends a list quietly at the end of its section and wraps sums at the address size,
//! where the reference reports damage and adds without wrapping (then clamps at the container's
//! last address). Sums are 128-bit, so nothing wraps.

use gimli::constants as dw;
use gimli::{AttributeValue, Reader, UnitOffset};

use super::{Decided, Defer, Sections, R};

/// An attribute as the reference keeps it: its form (from the abbreviation) and raw value.
pub(crate) type Attr<'a> = (dw::DwForm, AttributeValue<R<'a>>);

pub(crate) struct UnitData<'a> {
    pub sections: &'a Sections,
    pub header: gimli::UnitHeader<R<'a>>,
    pub abbrevs: std::sync::Arc<gimli::Abbreviations>,
    /// Offset of the unit header in .debug_info, and one past its last byte.
    pub offset: u64,
    pub end: u64,
    pub version: u16,
    pub addr_size: u8,
    pub offset_size: u8,
    pub low_pc: u128,
    pub str_offsets_base: u64,
    pub addr_base: u64,
    pub rnglists_base: u64,
    pub stmt_list: Option<u64>,
    pub comp_dir: Option<String>,
}

/// An unsigned constant as Python's `int(value)` reads it, for the forms that hold one.
pub(crate) fn int_value(value: &AttributeValue<R<'_>>) -> Decided<u64> {
    match *value {
        AttributeValue::Data1(v) => Ok(v.into()),
        AttributeValue::Data2(v) => Ok(v.into()),
        AttributeValue::Data4(v) => Ok(v.into()),
        AttributeValue::Data8(v) => Ok(v),
        AttributeValue::Udata(v) => Ok(v),
        AttributeValue::SecOffset(v) => Ok(v as u64),
        _ => Err(Defer("a base or offset in an unexpected form")),
    }
}

/// `info.source_line`: a line or column as llvm-symbolizer reads it (an unsigned constant modulo
/// 2^32; any other form reads 0).
pub(crate) fn source_line(attr: &Attr<'_>) -> Decided<i64> {
    let (form, value) = attr;
    let raw: u64 = match (*form, value) {
        (dw::DW_FORM_data1 | dw::DW_FORM_data2 | dw::DW_FORM_data4 | dw::DW_FORM_data8 | dw::DW_FORM_udata, _) => {
            int_value(value)?
        }
        (dw::DW_FORM_implicit_const, AttributeValue::Sdata(v)) => *v as u64,
        (dw::DW_FORM_flag_present, _) => 1,
        // The reference keeps a flag's byte; gimli keeps whether it is 0.
        (dw::DW_FORM_flag, AttributeValue::Flag(false)) => 0,
        (dw::DW_FORM_flag, _) => return Err(Defer("a line given as a flag")),
        (dw::DW_FORM_indirect, _) => return Err(Defer("DW_FORM_indirect")),
        _ => 0,
    };
    Ok((raw & 0xffff_ffff) as i64)
}

fn cstring_at(data: &[u8], offset: u64) -> Decided<&str> {
    let start = usize::try_from(offset).map_err(|_| Defer("string offset"))?;
    let rest = data.get(start..).filter(|rest| !rest.is_empty()).ok_or(Defer("string offset outside its section"))?;
    let text = std::ffi::CStr::from_bytes_until_nul(rest).map_err(|_| Defer("string without its NUL"))?;
    utf8(text.to_bytes())
}

/// A name as text, borrowed from its section; the reference replaces what is not UTF-8, which is
/// left to it.
pub(crate) fn utf8(bytes: &[u8]) -> Decided<&str> {
    std::str::from_utf8(bytes).map_err(|_| Defer("a name that is not UTF-8"))
}

impl<'a> UnitData<'a> {
    /// The unit at `offset` with its root DIE read (`parse_unit_header`, `_prepare_unit`).
    pub(crate) fn load(sections: &'a Sections, offset: u64) -> Decided<Self> {
        let info = gimli::DebugInfo::new(&sections.info, sections.endian);
        let header = info.header_from_offset(gimli::DebugInfoOffset(offset as usize))?;
        let version = header.version();
        if !(2..=5).contains(&version) {
            return Err(Defer("unit version"));
        }
        match header.type_() {
            gimli::UnitType::Compilation | gimli::UnitType::Partial => {}
            _ => return Err(Defer("a skeleton, split or type unit")),
        }
        let addr_size = header.address_size();
        if ![2, 4, 8].contains(&addr_size) {
            return Err(Defer("address size"));
        }
        let abbrevs = sections.abbrev_tables.get(sections, header.debug_abbrev_offset())?;
        let end = offset + header.length_including_self() as u64;
        let offset_size = header.format().word_size();
        let mut unit = UnitData {
            sections,
            header,
            abbrevs,
            offset,
            end,
            version,
            addr_size,
            offset_size,
            low_pc: 0,
            str_offsets_base: 0,
            addr_base: 0,
            rnglists_base: 0,
            stmt_list: None,
            comp_dir: None,
        };
        unit.read_root()?;
        Ok(unit)
    }

    /// Offset in .debug_info of the unit's first DIE.
    pub(crate) fn first_die(&self) -> u64 {
        self.offset + self.header.header_size() as u64
    }

    /// The DIE at .debug_info offset `die`: its abbreviation, every attribute given to `each` in
    /// order (the last of one wins, as in the reference's dict: `read_die_attributes`); None for a
    /// null entry. No list of them: a lookup reads tens of thousands of DIEs.
    pub(crate) fn read_die(&self, die: u64, mut each: impl FnMut(dw::DwAt, Attr<'a>)) -> Decided<Option<&gimli::Abbreviation>> {
        if die < self.first_die() || die >= self.end {
            return Err(Defer("a DIE reference outside its unit"));
        }
        let mut input = self.header.range_from(UnitOffset((die - self.offset) as usize)..)?;
        let code = input.read_uleb128()?;
        if code == 0 {
            return Ok(None);
        }
        let abbrev = self.abbrevs.get(code).ok_or(gimli::Error::InvalidAbbreviationCode(code))?;
        for &spec in abbrev.attributes() {
            if spec.form() == dw::DW_FORM_indirect {
                return Err(Defer("DW_FORM_indirect"));
            }
            each(spec.name(), (spec.form(), self.read_value(&mut input, spec)?));
        }
        Ok(Some(abbrev))
    }

    /// Attribute `spec`'s value at `input`, as gimli's `read_attribute` reads it raw: the usual
    /// forms of a node's attributes here, since a call into gimli (a reader set up for it) per
    /// attribute was most of the cost of reading a DIE.
    #[inline(always)]
    pub(crate) fn read_value(&self, input: &mut R<'a>, spec: gimli::AttributeSpecification) -> Decided<AttributeValue<R<'a>>> {
        Ok(match (spec.name(), spec.form()) {
            (_, dw::DW_FORM_addr) => AttributeValue::Addr(input.read_address(self.addr_size)?),
            (_, dw::DW_FORM_data1) => AttributeValue::Data1(input.read_u8()?),
            (_, dw::DW_FORM_data2) => AttributeValue::Data2(input.read_u16()?),
            // Not every data4 or data8: gimli reads those of some attributes (DWARF 2, 3) as offsets.
            (dw::DW_AT_high_pc, dw::DW_FORM_data4) => AttributeValue::Data4(input.read_u32()?),
            (dw::DW_AT_high_pc, dw::DW_FORM_data8) => AttributeValue::Data8(input.read_u64()?),
            (_, dw::DW_FORM_ref4) => AttributeValue::UnitRef(UnitOffset(input.read_u32()? as usize)),
            _ => {
                let mut raw = gimli::EntriesRaw::new(*input, self.header.encoding(), &self.abbrevs, UnitOffset(0));
                let value = raw.read_attribute(spec)?.raw_value();
                input.skip(raw.next_offset().0)?;
                value
            }
        })
    }

    fn read_root(&mut self) -> Decided<()> {
        let first = self.first_die();
        let mut values = Vec::new();
        let Some(abbrev) = self.read_die(first, |name, attr| values.push((name, attr)))? else { return Err(Defer("no root DIE")) };
        if abbrev.tag() != dw::DW_TAG_compile_unit && abbrev.tag() != dw::DW_TAG_partial_unit {
            return Err(Defer("root DIE is not a compile unit"));
        }
        let last = |name: dw::DwAt| values.iter().rev().find(|(at, _)| *at == name).map(|(_, attr)| attr.clone());
        if last(dw::DW_AT_dwo_name).is_some() || last(dw::DW_AT_GNU_dwo_name).is_some() {
            return Err(Defer("a split-DWARF skeleton"));
        }
        // _apply_bases
        if let Some((_, value)) = last(dw::DW_AT_str_offsets_base) {
            self.str_offsets_base = int_value(&value)?;
        }
        for attribute in [dw::DW_AT_addr_base, dw::DW_AT_GNU_addr_base] {
            if let Some((_, value)) = last(attribute) {
                self.addr_base = int_value(&value)?;
            }
        }
        if let Some((_, value)) = last(dw::DW_AT_rnglists_base) {
            self.rnglists_base = int_value(&value)?;
        }
        if let Some((_, value)) = last(dw::DW_AT_stmt_list) {
            self.stmt_list = Some(int_value(&value)?);
        }
        let low = last(dw::DW_AT_low_pc);
        let high = last(dw::DW_AT_high_pc);
        let bounds = self.pc_bounds(low.as_ref(), high.as_ref())?;
        if let Some((low_pc, _)) = bounds {
            self.low_pc = low_pc;
        } else if let Some(low) = &low {
            self.low_pc = self.address(low)?;
        }
        if let Some(name) = last(dw::DW_AT_name) {
            self.string(&name)?;
        }
        if let Some(comp_dir) = last(dw::DW_AT_comp_dir) {
            self.comp_dir = self.string(&comp_dir)?.map(str::to_owned);
        }
        if let Some(ranges) = last(dw::DW_AT_ranges) {
            // The unit's regions are the reader's; their damage is the unit's error there.
            self.decode_ranges(&ranges, &mut Vec::new())?;
        }
        Ok(())
    }

    /// `Unit.string`: the text a string form names; None for a form that names none.
    pub(crate) fn string(&self, attr: &Attr<'a>) -> Decided<Option<&'a str>> {
        let sections = self.sections;
        match &attr.1 {
            AttributeValue::String(bytes) => utf8(bytes.slice()).map(Some),
            AttributeValue::DebugStrRef(offset) => cstring_at(&sections.str, offset.0 as u64).map(Some),
            AttributeValue::DebugLineStrRef(offset) => cstring_at(&sections.line_str, offset.0 as u64).map(Some),
            AttributeValue::DebugStrOffsetsIndex(index) => {
                let offset = self.table_entry(&sections.str_offsets, self.str_offsets_base, index.0 as u64, self.offset_size)?;
                cstring_at(&sections.str, offset).map(Some)
            }
            AttributeValue::DebugStrRefSup(_) => Err(Defer("a dwz string")),
            // The reference decodes a block as text; never seen in a name.
            AttributeValue::Block(_) | AttributeValue::Exprloc(_) => Err(Defer("a name given as a block")),
            _ if attr.0 == dw::DW_FORM_indirect => Err(Defer("DW_FORM_indirect")),
            _ => Ok(None),
        }
    }

    /// `Unit.address`: an address form's value, an index resolved through .debug_addr.
    pub(crate) fn address(&self, attr: &Attr<'a>) -> Decided<u128> {
        match attr.1 {
            AttributeValue::Addr(address) => Ok(address.into()),
            AttributeValue::DebugAddrIndex(index) => self.indexed_address(index.0 as u64),
            AttributeValue::Data1(_) | AttributeValue::Data2(_) | AttributeValue::Data4(_)
            | AttributeValue::Data8(_) | AttributeValue::Udata(_) => Ok(int_value(&attr.1)?.into()),
            _ => Err(Defer("an address in an unexpected form")),
        }
    }

    fn indexed_address(&self, index: u64) -> Decided<u128> {
        Ok(self.table_entry(&self.sections.addr, self.addr_base, index, self.addr_size)?.into())
    }

    /// Entry `index` of a table of `size`-byte entries at `base` in `data` (.debug_str_offsets,
    /// .debug_addr, the offsets of .debug_rnglists).
    fn table_entry(&self, data: &[u8], base: u64, index: u64, size: u8) -> Decided<u64> {
        let position = u128::from(base) + u128::from(index) * u128::from(size);
        let start = usize::try_from(position).map_err(|_| Defer("a table index past the address space"))?;
        let bytes = data.get(start..).ok_or(Defer("offset outside its section"))?;
        let mut reader = R::new(bytes, self.sections.endian);
        Ok(reader.read_sized_offset(size).map_err(|_| Defer("offset outside its section"))? as u64)
    }

    /// `Unit.pc_bounds`: (low, high) of `DW_AT_low_pc` and `DW_AT_high_pc`, high clamped.
    pub(crate) fn pc_bounds(&self, low: Option<&Attr<'a>>, high: Option<&Attr<'a>>) -> Decided<Option<(u128, u128)>> {
        let (Some(low), Some(high)) = (low, high) else { return Ok(None) };
        let low_pc = self.address(low)?;
        let high_pc = match (high.0, &high.1) {
            (dw::DW_FORM_sdata | dw::DW_FORM_implicit_const, AttributeValue::Sdata(offset)) => {
                if *offset < 0 {
                    return Err(Defer("a negative DW_AT_high_pc offset"));
                }
                low_pc + *offset as u128
            }
            (dw::DW_FORM_data1 | dw::DW_FORM_data2 | dw::DW_FORM_data4 | dw::DW_FORM_data8 | dw::DW_FORM_udata, value) => {
                low_pc + u128::from(int_value(value)?)
            }
            _ => self.address(high)?,
        };
        Ok(Some((low_pc, high_pc.min(self.sections.last_address()))))
    }

    /// `decode_ranges`: the ranges a `DW_AT_ranges` names, clamped, empty ones dropped, appended
    /// to `ranges` (a large unit has hundreds of thousands of lists: no list of their own).
    pub(crate) fn decode_ranges(&self, attr: &Attr<'a>, ranges: &mut Vec<(u64, u64)>) -> Decided<()> {
        if self.version >= 5 {
            let offset = match attr.1 {
                AttributeValue::DebugRngListsIndex(index) => self.rnglistx_offset(index.0 as u64)?,
                AttributeValue::RangeListsRef(offset) => offset.0 as u64,
                _ => int_value(&attr.1)?,
            };
            self.rnglist(offset, ranges)?;
        } else {
            let offset = match attr.1 {
                AttributeValue::RangeListsRef(offset) => offset.0 as u64,
                AttributeValue::DebugRngListsIndex(_) => return Err(Defer("DW_FORM_rnglistx before DWARF 5")),
                _ => int_value(&attr.1)?,
            };
            self.debug_ranges(offset, ranges)?;
        }
        Ok(())
    }

    /// A range of a list as `decode_ranges` keeps it: its high clamped to the last address (so
    /// both fit 64 bits), an empty one dropped.
    fn keep_range(&self, ranges: &mut Vec<(u64, u64)>, (low, high): (u128, u128)) {
        let high = high.min(self.sections.last_address());
        if high > low {
            ranges.push((low as u64, high as u64));
        }
    }

    fn rnglistx_offset(&self, index: u64) -> Decided<u64> {
        let offset = self.table_entry(&self.sections.rnglists, self.rnglists_base, index, self.offset_size)?;
        self.rnglists_base.checked_add(offset).ok_or(Defer("range list offset"))
    }

    fn section_reader(&self, data: &'a [u8], offset: u64) -> Decided<R<'a>> {
        let start = usize::try_from(offset).map_err(|_| Defer("offset past the address space"))?;
        if start >= data.len() {
            return Err(Defer("range list offset outside its section"));
        }
        Ok(R::new(&data[start..], self.sections.endian))
    }

    /// `_rnglist` (DWARF 5, 2.17.3): the entries of the list at `offset` in .debug_rnglists, appended
    /// to `ranges`.
    fn rnglist(&self, offset: u64, ranges: &mut Vec<(u64, u64)>) -> Decided<()> {
        let mut input = self.section_reader(&self.sections.rnglists, offset)?;
        let size = self.addr_size;
        let mut base = self.low_pc;
        loop {
            let kind = gimli::DwRle(input.read_u8()?);
            match kind {
                dw::DW_RLE_end_of_list => {
                    return Ok(());
                }
                dw::DW_RLE_offset_pair => {
                    let start = input.read_uleb128()?;
                    let end = input.read_uleb128()?;
                    self.keep_range(ranges, (base + u128::from(start), base + u128::from(end)));
                }
                dw::DW_RLE_base_address => base = input.read_address(size)?.into(),
                dw::DW_RLE_base_addressx => base = self.indexed_address(input.read_uleb128()?)?,
                dw::DW_RLE_startx_endx => {
                    let start = input.read_uleb128()?;
                    let end = input.read_uleb128()?;
                    self.keep_range(ranges, (self.indexed_address(start)?, self.indexed_address(end)?));
                }
                dw::DW_RLE_startx_length => {
                    let start = input.read_uleb128()?;
                    let length = input.read_uleb128()?;
                    let low = self.indexed_address(start)?;
                    self.keep_range(ranges, (low, low + u128::from(length)));
                }
                dw::DW_RLE_start_end => {
                    let low = input.read_address(size)?;
                    let high = input.read_address(size)?;
                    self.keep_range(ranges, (low.into(), high.into()));
                }
                dw::DW_RLE_start_length => {
                    let low = input.read_address(size)?;
                    let length = input.read_uleb128()?;
                    self.keep_range(ranges, (low.into(), u128::from(low) + u128::from(length)));
                }
                _ => return Err(Defer("unknown range list entry")),
            }
        }
    }

    /// `_debug_ranges` (DWARF 4, 2.17.3): the list at `offset` in .debug_ranges, appended to `ranges`.
    fn debug_ranges(&self, offset: u64, ranges: &mut Vec<(u64, u64)>) -> Decided<()> {
        let size = self.addr_size;
        if u128::from(offset) + 2 * u128::from(size) > self.sections.ranges.len() as u128 {
            return Err(Defer("range list offset outside .debug_ranges"));
        }
        let mut input = self.section_reader(&self.sections.ranges, offset)?;
        let base_selector = if size == 8 { u64::MAX } else { (1u64 << (8 * u32::from(size))) - 1 };
        let mut base = self.low_pc;
        loop {
            let start = input.read_address(size)?;
            let end = input.read_address(size)?;
            if start == 0 && end == 0 {
                return Ok(());
            }
            if start == base_selector {
                base = end.into();
            } else {
                self.keep_range(ranges, (base + u128::from(start), base + u128::from(end)));
            }
        }
    }
}
