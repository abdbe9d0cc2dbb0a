//! Range list decoding, the twin of `formats/dwarf/ranges.py` (`decode_ranges_attribute`):
//! `.debug_rnglists` (DWARF 5, 2.17.3 and 7.25) and `.debug_ranges` (DWARF 4, 2.17.3).
//!
//! The Python function stays the reference. This twin gives the same ranges (empty ones dropped,
//! ends clamped to the container's last address) and raises the same `DwarfFormatError` messages
//! for the checks the reference makes itself; where the reference would fail another way (a read
//! past a section's end, a value that is not a non-negative integer below 2**64, a LEB128 number
//! past 64 bits) it returns `Outcome::Reference` and the caller runs the reference. Every read is
//! checked against the section's length and every sum is computed in 128 bits.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt};

const FORM_RNGLISTX: u64 = 0x23;

const RLE_END_OF_LIST: u8 = 0x00;
const RLE_BASE_ADDRESSX: u8 = 0x01;
const RLE_STARTX_ENDX: u8 = 0x02;
const RLE_STARTX_LENGTH: u8 = 0x03;
const RLE_OFFSET_PAIR: u8 = 0x04;
const RLE_BASE_ADDRESS: u8 = 0x05;
const RLE_START_END: u8 = 0x06;
const RLE_START_LENGTH: u8 = 0x07;

/// What the decode needs of a `Unit` and its sections.
pub struct RangeUnit<'a> {
    pub version: u64,
    pub addr_size: u8,
    pub offset_size: u8,
    pub little_endian: bool,
    pub low_pc: u64,
    pub addr_base: u64,
    pub rnglists_base: u64,
    pub ranges_base: u64,
    pub last_address: u64,
    pub rnglists: &'a [u8],
    pub ranges: &'a [u8],
    pub addr: &'a [u8],
}

/// Why no ranges came back.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The reference's DwarfFormatError, with its message.
    Format(String),
    /// The reference fails another way (or a value is past 64 bits): it decides.
    Reference,
}

type Decoded<T> = Result<T, Failure>;

fn fixed(data: &[u8], offset: u128, size: u8, little_endian: bool) -> Decoded<u64> {
    let start = usize::try_from(offset).map_err(|_| Failure::Reference)?;
    let stop = start.checked_add(usize::from(size)).ok_or(Failure::Reference)?;
    let bytes = data.get(start..stop).ok_or(Failure::Reference)?;
    let mut value = 0u64;
    for index in 0..bytes.len() {
        let byte = if little_endian { bytes[bytes.len() - 1 - index] } else { bytes[index] };
        value = value << 8 | u64::from(byte);
    }
    Ok(value)
}

/// (value, offset past it); a value past 64 bits is left to the reference.
fn uleb(data: &[u8], mut offset: u128) -> Decoded<(u64, u128)> {
    let mut value: u64 = 0;
    let mut shift: u32 = 0;
    loop {
        let byte = *usize::try_from(offset).ok().and_then(|at| data.get(at)).ok_or(Failure::Reference)?;
        offset += 1;
        let payload = u64::from(byte & 0x7F);
        if shift < 64 {
            if shift > 57 && payload >> (64 - shift) != 0 {
                return Err(Failure::Reference);
            }
            value |= payload << shift;
        } else if payload != 0 {
            return Err(Failure::Reference);
        }
        if byte < 0x80 {
            return Ok((value, offset));
        }
        shift = shift.saturating_add(7);
    }
}

impl RangeUnit<'_> {
    /// `Unit.address` for `DW_FORM_addrx`.
    fn indexed_address(&self, index: u64) -> Decoded<u64> {
        let position = u128::from(self.addr_base) + u128::from(index) * u128::from(self.addr_size);
        if position + u128::from(self.addr_size) > self.addr.len() as u128 {
            return Err(Failure::Format(format!("address index {index} outside .debug_addr")));
        }
        fixed(self.addr, position, self.addr_size, self.little_endian)
    }

    fn rnglistx_offset(&self, index: u64) -> Decoded<u128> {
        let position = u128::from(self.rnglists_base) + u128::from(index) * u128::from(self.offset_size);
        if position + u128::from(self.offset_size) > self.rnglists.len() as u128 {
            return Err(Failure::Format(format!("range list index {index} outside .debug_rnglists")));
        }
        Ok(u128::from(self.rnglists_base) + u128::from(fixed(self.rnglists, position, self.offset_size, self.little_endian)?))
    }

    fn rnglist(&self, mut offset: u128) -> Decoded<Vec<(u128, u128)>> {
        let data = self.rnglists;
        let size = self.addr_size;
        let mut base = u128::from(self.low_pc);
        let mut ranges = Vec::new();
        if offset >= data.len() as u128 {
            return Err(Failure::Format(format!("range list offset {offset:#x} outside .debug_rnglists")));
        }
        loop {
            let kind = *usize::try_from(offset).ok().and_then(|at| data.get(at)).ok_or(Failure::Reference)?;
            offset += 1;
            match kind {
                RLE_END_OF_LIST => {
                    ranges.retain(|(low, high)| high > low);
                    return Ok(ranges);
                }
                RLE_OFFSET_PAIR => {
                    let (start, past) = uleb(data, offset)?;
                    let (end, past) = uleb(data, past)?;
                    offset = past;
                    ranges.push((base + u128::from(start), base + u128::from(end)));
                }
                RLE_BASE_ADDRESS => {
                    base = u128::from(fixed(data, offset, size, self.little_endian)?);
                    offset += u128::from(size);
                }
                RLE_BASE_ADDRESSX => {
                    let (index, past) = uleb(data, offset)?;
                    offset = past;
                    base = u128::from(self.indexed_address(index)?);
                }
                RLE_STARTX_ENDX => {
                    let (start, past) = uleb(data, offset)?;
                    let (end, past) = uleb(data, past)?;
                    offset = past;
                    let low = self.indexed_address(start)?;
                    let high = self.indexed_address(end)?;
                    ranges.push((u128::from(low), u128::from(high)));
                }
                RLE_STARTX_LENGTH => {
                    let (start, past) = uleb(data, offset)?;
                    let (length, past) = uleb(data, past)?;
                    offset = past;
                    let low = u128::from(self.indexed_address(start)?);
                    ranges.push((low, low + u128::from(length)));
                }
                RLE_START_END => {
                    let low = fixed(data, offset, size, self.little_endian)?;
                    let high = fixed(data, offset + u128::from(size), size, self.little_endian)?;
                    offset += 2 * u128::from(size);
                    ranges.push((u128::from(low), u128::from(high)));
                }
                RLE_START_LENGTH => {
                    let low = u128::from(fixed(data, offset, size, self.little_endian)?);
                    let (length, past) = uleb(data, offset + u128::from(size))?;
                    offset = past;
                    ranges.push((low, low + u128::from(length)));
                }
                _ => return Err(Failure::Format(format!("unknown range list entry kind {kind:#x}"))),
            }
        }
    }

    fn debug_ranges(&self, mut offset: u128) -> Decoded<Vec<(u128, u128)>> {
        let data = self.ranges;
        let size = self.addr_size;
        let base_selector = if size >= 8 { u64::MAX } else { (1u64 << (8 * u32::from(size))) - 1 };
        let mut base = u128::from(self.low_pc);
        let mut ranges = Vec::new();
        if offset + 2 * u128::from(size) > data.len() as u128 {
            return Err(Failure::Format(format!("range list offset {offset:#x} outside .debug_ranges")));
        }
        loop {
            let start = fixed(data, offset, size, self.little_endian)?;
            let end = fixed(data, offset + u128::from(size), size, self.little_endian)?;
            offset += 2 * u128::from(size);
            if start == 0 && end == 0 {
                ranges.retain(|(low, high)| high > low);
                return Ok(ranges);
            }
            if start == base_selector {
                base = u128::from(end);
            } else {
                ranges.push((base + u128::from(start), base + u128::from(end)));
            }
        }
    }

    /// `decode_ranges_attribute`: the ranges, clamped to the last address (`clamp_ranges`).
    pub fn decode(&self, form: u64, value: u64) -> Decoded<Vec<(u64, u64)>> {
        let ranges = if self.version >= 5 {
            let offset = if form == FORM_RNGLISTX { self.rnglistx_offset(value)? } else { u128::from(value) };
            self.rnglist(offset)?
        } else {
            self.debug_ranges(u128::from(value) + u128::from(self.ranges_base))?
        };
        let last = u128::from(self.last_address);
        Ok(ranges
            .into_iter()
            .map(|(low, high)| (low, high.min(last)))
            .filter(|(low, high)| high > low)
            .map(|(low, high)| (low as u64, high as u64))
            .collect())
    }
}

/// `Unit.address`'s forms that index `.debug_addr` (`unit._ADDRX_FORMS`).
fn is_addrx(form: u64) -> bool {
    matches!(form, 0x1B | 0x29 | 0x2A | 0x2B | 0x2C | 0x1F01)
}

/// `unit._CONSTANT_FORMS`: a `DW_AT_high_pc` of these is an offset from `DW_AT_low_pc`.
fn is_constant(form: u64) -> bool {
    matches!(form, 0x0B | 0x05 | 0x06 | 0x07 | 0x0F | 0x0D | 0x21)
}

/// A raw attribute value as the walk read it: an unsigned or signed integer, or anything else
/// (bytes), which the reference turns into an integer its own way or rejects.
#[derive(Clone, Copy)]
pub enum Raw {
    Unsigned(u64),
    Signed(i64),
    Other,
}

impl RangeUnit<'_> {
    /// `Unit.address(form, value)`.
    fn address(&self, form: u64, value: Raw) -> Decoded<i128> {
        match value {
            Raw::Unsigned(value) if is_addrx(form) => Ok(i128::from(self.indexed_address(value)?)),
            Raw::Unsigned(value) => Ok(i128::from(value)),
            Raw::Signed(value) if !is_addrx(form) => Ok(i128::from(value)),
            _ => Err(Failure::Reference),
        }
    }

    /// `scan._node_ranges`: a node's ranges from its `DW_AT_ranges`, else its low and high pc.
    pub fn node_ranges(
        &self,
        ranges: Option<(u64, Raw)>,
        low: Option<(u64, Raw)>,
        high: Option<(u64, Raw)>,
    ) -> Decoded<Vec<(u64, u64)>> {
        if let Some((form, value)) = ranges {
            let Raw::Unsigned(value) = value else { return Err(Failure::Reference) };
            return self.decode(form, value);
        }
        let (Some((low_form, low_value)), Some((high_form, high_value))) = (low, high) else {
            return Ok(Vec::new());
        };
        // Unit.pc_bounds
        let low_pc = self.address(low_form, low_value)?;
        let high_pc = if is_constant(high_form) {
            match high_value {
                Raw::Unsigned(value) => low_pc + i128::from(value),
                Raw::Signed(value) => low_pc + i128::from(value),
                Raw::Other => return Err(Failure::Reference),
            }
        } else {
            self.address(high_form, high_value)?
        };
        let high_pc = high_pc.min(i128::from(self.last_address));
        if high_pc <= low_pc {
            return Ok(Vec::new());
        }
        // A negative low (a signed form) is the reference's to keep.
        let low_pc = u64::try_from(low_pc).map_err(|_| Failure::Reference)?;
        Ok(vec![(low_pc, high_pc as u64)])
    }
}

pyo3::import_exception!(symbolize.formats.dwarf.reader, DwarfFormatError);

/// The sections and fields of a `Unit` that a range decode reads, held while a `RangeUnit` borrows them.
pub struct RangeSource<'py> {
    rnglists: Bound<'py, PyBytes>,
    ranges: Bound<'py, PyBytes>,
    addr: Bound<'py, PyBytes>,
    numbers: [u64; 8],
    little_endian: bool,
}

impl<'py> RangeSource<'py> {
    /// None where some field is not what the decode can read (then the reference decides).
    pub fn of(unit: &Bound<'py, PyAny>) -> PyResult<Option<Self>> {
        let py = unit.py();
        let sections = unit.getattr(intern!(py, "sections"))?;
        let section = |name| -> PyResult<Option<Bound<'py, PyBytes>>> { Ok(sections.getattr(name)?.cast_into::<PyBytes>().ok()) };
        let (Some(rnglists), Some(ranges), Some(addr)) =
            (section(intern!(py, "rnglists"))?, section(intern!(py, "ranges"))?, section(intern!(py, "addr"))?)
        else {
            return Ok(None);
        };
        let mut numbers = [0u64; 8];
        let names = [
            intern!(py, "version"), intern!(py, "addr_size"), intern!(py, "offset_size"), intern!(py, "low_pc"),
            intern!(py, "addr_base"), intern!(py, "rnglists_base"), intern!(py, "ranges_base"),
        ];
        for (number, name) in numbers.iter_mut().zip(names) {
            let Ok(value) = unit.getattr(name)?.extract::<u64>() else { return Ok(None) };
            *number = value;
        }
        let Ok(last_address) = sections.getattr(intern!(py, "last_address"))?.extract::<u64>() else { return Ok(None) };
        numbers[7] = last_address;
        // The reference reads addresses of 2, 4 or 8 bytes (uint_reader) and offsets of 4 or 8.
        if !matches!(numbers[1], 2 | 4 | 8) || !matches!(numbers[2], 4 | 8) {
            return Ok(None);
        }
        let little_endian = sections.getattr(intern!(py, "little_endian"))?.is_truthy()?;
        Ok(Some(RangeSource { rnglists, ranges, addr, numbers, little_endian }))
    }

    pub fn unit(&self) -> RangeUnit<'_> {
        let [version, addr_size, offset_size, low_pc, addr_base, rnglists_base, ranges_base, last_address] = self.numbers;
        RangeUnit {
            version,
            addr_size: addr_size as u8,
            offset_size: offset_size as u8,
            little_endian: self.little_endian,
            low_pc,
            addr_base,
            rnglists_base,
            ranges_base,
            last_address,
            rnglists: self.rnglists.as_bytes(),
            ranges: self.ranges.as_bytes(),
            addr: self.addr.as_bytes(),
        }
    }
}

fn answered(decoded: Decoded<Vec<(u64, u64)>>) -> PyResult<Option<Vec<(u64, u64)>>> {
    match decoded {
        Ok(decoded) => Ok(Some(decoded)),
        Err(Failure::Format(message)) => Err(DwarfFormatError::new_err(message)),
        Err(Failure::Reference) => Ok(None),
    }
}

/// Twin of `ranges.decode_ranges(unit, form, value)`: the same list of (low, high), or the same
/// DwarfFormatError; None where the reference must decide (see the module's comment).
#[pyfunction]
pub fn decode_ranges(unit: &Bound<'_, PyAny>, form: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<Option<Vec<(u64, u64)>>> {
    let (Ok(form), Ok(value)) = (form.extract::<u64>(), value.extract::<u64>()) else { return Ok(None) };
    let Some(source) = RangeSource::of(unit)? else { return Ok(None) };
    answered(source.unit().decode(form, value))
}

fn raw_attribute(values: &Bound<'_, PyDict>, slot: u8) -> PyResult<Result<Option<(u64, Raw)>, ()>> {
    let Some(found) = values.get_item(slot)? else { return Ok(Ok(None)) };
    let Ok((form, value)) = found.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>() else { return Ok(Err(())) };
    let Ok(form) = form.extract::<u64>() else { return Ok(Err(())) };
    let raw = if value.is_instance_of::<PyInt>() {
        if let Ok(value) = value.extract::<u64>() {
            Raw::Unsigned(value)
        } else if let Ok(value) = value.extract::<i64>() {
            Raw::Signed(value)
        } else {
            return Ok(Err(()));
        }
    } else {
        Raw::Other
    };
    Ok(Ok(Some((form, raw))))
}

/// Twin of `scan._node_ranges(unit, values)` (values: slot -> (form, raw value), as the walk keeps
/// them): the same ranges or DwarfFormatError; None where the reference must decide.
#[pyfunction]
pub fn node_ranges(unit: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>) -> PyResult<Option<Vec<(u64, u64)>>> {
    let Ok(values) = values.cast::<PyDict>() else { return Ok(None) };
    let (Ok(ranges), Ok(low), Ok(high)) = (raw_attribute(values, 5)?, raw_attribute(values, 3)?, raw_attribute(values, 4)?)
    else {
        return Ok(None);
    };
    let Some(source) = RangeSource::of(unit)? else { return Ok(None) };
    answered(source.unit().node_ranges(ranges, low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit<'a>(rnglists: &'a [u8], ranges: &'a [u8], version: u64) -> RangeUnit<'a> {
        RangeUnit {
            version,
            addr_size: 8,
            offset_size: 4,
            little_endian: true,
            low_pc: 0x1000,
            addr_base: 0,
            rnglists_base: 0,
            ranges_base: 0,
            last_address: u64::MAX,
            rnglists,
            ranges,
            addr: &[],
        }
    }

    #[test]
    fn offset_pairs_are_relative_to_the_base_and_empty_ones_dropped() {
        let list = [RLE_OFFSET_PAIR, 0x10, 0x20, RLE_OFFSET_PAIR, 5, 5, RLE_END_OF_LIST];
        assert_eq!(unit(&list, &[], 5).decode(0x17, 0), Ok(vec![(0x1010, 0x1020)]));
    }

    #[test]
    fn a_list_cut_short_is_left_to_the_reference() {
        assert_eq!(unit(&[RLE_OFFSET_PAIR, 0x10], &[], 5).decode(0x17, 0), Err(Failure::Reference));
        assert_eq!(
            unit(&[9], &[], 5).decode(0x17, 0),
            Err(Failure::Format("unknown range list entry kind 0x9".to_owned()))
        );
    }

    #[test]
    fn debug_ranges_base_selector_moves_the_base() {
        let mut data = Vec::new();
        for value in [u64::MAX, 0x4000, 0x10, 0x20, 0, 0] {
            data.extend_from_slice(&value.to_le_bytes());
        }
        assert_eq!(unit(&[], &data, 4).decode(0x17, 0), Ok(vec![(0x4010, 0x4020)]));
    }
}
