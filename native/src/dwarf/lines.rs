//! A unit's line table as the reference decodes it (`formats/dwarf/lines.py`; DWARF 5, 6.2).
//!
//! gimli reads the program header (its fields, directory and file entries with their forms). This
//! module decides two things that are the reference's, not a library's:
//!
//! * the file names: each joined with its directory as llvm-symbolizer joins them (`join_path`),
//!   DWARF 4 numbering from 1 (a `None` first), DWARF 5's directory 0 as the base of the others;
//! * the rows that answer: a row whose address the next row of its sequence repeats is dropped
//!   (a lookup never lands on it), and the damage checks of `_run_program` (a line below 0, a
//!   value too large to store, an address past 64 bits) leave the unit to the reference.
//!
//! The opcodes are stepped here over gimli's byte reader, not by gimli's `LineRows`: the
//! reference takes `DW_LNE_set_address` only with an operand of the unit's address size, ignores
//! `maximum_operations_per_instruction`, and a program whose address steps back is the
//! reference's own slow path; each of those is a rule gimli's state machine does not share.

use gimli::constants as dw;
use gimli::{AttributeValue, Reader};

use super::unit::{utf8, UnitData};
use super::{names::Text, Decided, Defer, R};

/// The rows as columns of 24 bytes a row: a lazy unit keeps its table for the whole run, so a
/// file, line or column past 32 bits (no compiler's; llvm-symbolizer keeps 32) leaves the unit to
/// the reference rather than widening every row.
pub(crate) struct LineTable {
    pub files: Vec<Option<Text>>,
    pub addresses: Vec<u64>,
    pub file_indexes: Vec<u32>,
    pub lines: Vec<u32>,
    pub columns: Vec<u32>,
    pub discriminators: Vec<u32>,
    /// (low, high, first row, end row), sorted.
    pub sequences: Vec<(u128, u128, usize, usize)>,
}

/// `lines.join_path`: absolute names win; the separator follows the directory's style.
pub(crate) fn join_path(directory: Option<&str>, name: &str) -> String {
    let directory = match directory {
        Some(directory) if !directory.is_empty() => directory,
        _ => return name.to_owned(),
    };
    // A drive letter: a second character ':' with more after it.
    let mut chars = name.chars();
    let drive = chars.nth(1) == Some(':') && chars.next().is_some();
    if name.starts_with('/') || name.starts_with('\\') || drive {
        return name.to_owned();
    }
    let separator = if directory.contains('\\') && !directory.contains('/') { '\\' } else { '/' };
    let directory = directory.trim_end_matches(['/', '\\']);
    let mut joined = String::with_capacity(directory.len() + 1 + name.len());
    joined.push_str(directory);
    joined.push(separator);
    joined.push_str(name);
    joined
}

/// The text of a directory or file entry's path: strings only (another form reads "", as in the
/// reference, which keeps only a `str` value).
fn entry_path<'a>(unit: &UnitData<'a>, value: &AttributeValue<R<'a>>) -> Decided<String> {
    match value {
        AttributeValue::String(_)
        | AttributeValue::DebugStrRef(_)
        | AttributeValue::DebugLineStrRef(_)
        | AttributeValue::DebugStrOffsetsIndex(_) => {
            Ok(unit.string(&(dw::DW_FORM_string, value.clone()))?.unwrap_or_default().to_owned())
        }
        _ => Ok(String::new()),
    }
}

/// The forms `_read_entries` reads; another makes the reference fail the unit.
fn entry_forms_known(formats: &[gimli::FileEntryFormat]) -> Decided<()> {
    let mut seen = Vec::new();
    for format in formats {
        if seen.contains(&format.content_type) {
            return Err(Defer("a line header entry format listed twice"));
        }
        seen.push(format.content_type);
        match format.form {
            dw::DW_FORM_string | dw::DW_FORM_line_strp | dw::DW_FORM_strp | dw::DW_FORM_udata | dw::DW_FORM_data1
            | dw::DW_FORM_data2 | dw::DW_FORM_data4 | dw::DW_FORM_data8 | dw::DW_FORM_data16 | dw::DW_FORM_block
            | dw::DW_FORM_strx | dw::DW_FORM_strx1 | dw::DW_FORM_strx2 | dw::DW_FORM_strx3 | dw::DW_FORM_strx4 => {}
            _ => return Err(Defer("a line header entry form the reference does not read")),
        }
    }
    Ok(())
}

fn file_names<'a>(unit: &UnitData<'a>, header: &gimli::LineProgramHeader<R<'a>>) -> Decided<Vec<Option<Text>>> {
    let comp_dir = unit.comp_dir.as_deref();
    if header.version() >= 5 {
        entry_forms_known(header.directory_entry_format())?;
        entry_forms_known(header.file_name_entry_format())?;
        let directories = header
            .include_directories()
            .iter()
            .map(|value| entry_path(unit, value))
            .collect::<Decided<Vec<String>>>()?;
        let mut files = Vec::with_capacity(header.file_names().len());
        for entry in header.file_names() {
            let name = entry_path(unit, &entry.path_name())?;
            let index = entry.directory_index();
            let mut directory = usize::try_from(index).ok().and_then(|at| directories.get(at)).cloned();
            if let Some(found) = &directory {
                if index != 0 {
                    let base = directories.first().map(String::as_str).or(comp_dir);
                    directory = Some(join_path(base, found));
                }
            }
            files.push(Some(join_path(directory.as_deref(), &name).into()));
        }
        Ok(files)
    } else {
        let mut directories = vec![comp_dir.unwrap_or("").to_owned()];
        for value in header.include_directories() {
            let AttributeValue::String(bytes) = value else { return Err(Defer("a DWARF 4 directory not inline")) };
            directories.push(join_path(comp_dir, utf8(bytes.slice())?));
        }
        let mut files = vec![None];
        for entry in header.file_names() {
            let AttributeValue::String(bytes) = entry.path_name() else { return Err(Defer("a DWARF 4 file not inline")) };
            let name = utf8(bytes.slice())?;
            let directory = usize::try_from(entry.directory_index()).ok().and_then(|at| directories.get(at));
            files.push(Some(join_path(directory.map(String::as_str), name).into()));
        }
        Ok(files)
    }
}

/// A row: address, file, line, column, discriminator.
type Row = (u128, u64, i128, u64, u32);

impl LineTable {
    /// A table of `files`, with room for a `length`-byte program's rows: compilers spend about 3
    /// bytes a row (a special opcode, a column or line advance), so growth by doubling is rare.
    fn for_program(files: Vec<Option<Text>>, length: usize) -> Self {
        let rows = length / 3;
        LineTable {
            files,
            addresses: Vec::with_capacity(rows),
            file_indexes: Vec::with_capacity(rows),
            lines: Vec::with_capacity(rows),
            columns: Vec::with_capacity(rows),
            discriminators: Vec::with_capacity(rows),
            sequences: Vec::new(),
        }
    }

    #[inline(always)]
    fn push(&mut self, (address, file, line, column, discriminator): Row) -> Decided<()> {
        if line < 0 {
            return Err(Defer("a line program that steps below line 0"));
        }
        let narrow = || Defer("a file, line or column past 32 bits");
        let (file, line, column) = (
            u32::try_from(file).map_err(|_| narrow())?,
            u32::try_from(line).map_err(|_| narrow())?,
            u32::try_from(column).map_err(|_| narrow())?,
        );
        self.addresses.push(u64::try_from(address).map_err(|_| Defer("a line address past 64 bits"))?);
        self.file_indexes.push(file);
        self.lines.push(line);
        self.columns.push(column);
        self.discriminators.push(discriminator);
        Ok(())
    }
}

const LINE_LIMIT: i128 = 1 << 62;

/// `decode_line_table`: the unit's line table at `offset` in .debug_line.
pub(crate) fn decode<'a>(unit: &UnitData<'a>, offset: u64) -> Decided<LineTable> {
    let sections = unit.sections;
    let debug_line = gimli::DebugLine::new(&sections.line, sections.endian);
    let program = debug_line.program(gimli::DebugLineOffset(offset as usize), unit.addr_size, None, None)?;
    let header = program.header();
    if !(2..=5).contains(&header.version()) {
        return Err(Defer("line table version"));
    }
    let opcode_base = header.opcode_base();
    let line_range = header.line_range();
    if opcode_base == 0 || line_range == 0 {
        return Err(Defer("a line header the reference reads its own way"));
    }
    let files = file_names(unit, header)?;
    let min_length = u128::from(header.minimum_instruction_length());
    let line_base = i128::from(header.line_base());
    let standard_lengths = header.standard_opcode_lengths().slice();
    let special = |opcode: u8| -> (u128, i128) {
        let adjusted = opcode - opcode_base;
        (u128::from(adjusted / line_range) * min_length, line_base + i128::from(adjusted % line_range))
    };
    let const_add_pc = special(255).0;
    let addr_size = unit.addr_size;
    let mut input = header.raw_program_buf();
    let mut table = LineTable::for_program(files, input.len());
    let (mut address, mut file, mut line, mut column): (u128, u64, i128, u64) = (0, 1, 1, 0);
    let mut discriminator: u32 = 0;
    let mut first_row = 0usize;
    // The last row, held back until the next shows whether it repeats its address.
    let mut held: Option<Row> = None;
    while !input.is_empty() {
        let opcode = input.read_u8()?;
        if opcode >= opcode_base || opcode == dw::DW_LNS_copy.0 {
            if opcode >= opcode_base {
                let (address_advance, line_advance) = special(opcode);
                address += address_advance;
                line += line_advance;
            }
            if address > u128::from(u64::MAX) || line.abs() >= LINE_LIMIT {
                return Err(Defer("a line program past what the reference stores"));
            }
            match held {
                Some(row) if row.0 == address => {
                    if row.2 < 0 {
                        return Err(Defer("a line program that steps below line 0"));
                    }
                }
                Some(row) => table.push(row)?,
                None => {}
            }
            // A row takes the discriminator set since the last row, which then goes back to 0.
            held = Some((address, file, line, column, discriminator));
            discriminator = 0;
            continue;
        }
        match gimli::DwLns(opcode) {
            dw::DW_LNS_set_column => {
                column = input.read_uleb128()?;
                if column >> 63 != 0 {
                    return Err(Defer("a column too large to store"));
                }
            }
            dw::DW_LNS_advance_line => {
                line += i128::from(input.read_sleb128()?);
                if line.abs() >= LINE_LIMIT {
                    return Err(Defer("a line too large to store"));
                }
            }
            dw::DW_LNS_negate_stmt => {}
            dw::DW_LNS_set_file => {
                file = input.read_uleb128()?;
                if file >> 63 != 0 {
                    return Err(Defer("a file index too large to store"));
                }
            }
            dw::DW_LNS_const_add_pc => address += const_add_pc,
            dw::DW_LNS_advance_pc => address += u128::from(input.read_uleb128()?) * min_length,
            dw::DW_LNS_fixed_advance_pc => address += u128::from(input.read_u16()?),
            _ if opcode == 0 => {
                let length = input.read_uleb128()?;
                if length == 0 {
                    continue;
                }
                let sub_opcode = gimli::DwLne(input.read_u8()?);
                let operand_size = length - 1;
                if sub_opcode == dw::DW_LNE_set_address && operand_size == u64::from(addr_size) {
                    let new_address = u128::from(input.read_address(addr_size)?);
                    if new_address < address {
                        return Err(Defer("a line program whose address steps back"));
                    }
                    address = new_address;
                    continue;
                }
                if sub_opcode == dw::DW_LNE_set_discriminator {
                    let size = usize::try_from(operand_size).map_err(|_| Defer("operand size"))?;
                    discriminator = discriminator_within(input.split(size)?.slice());
                    continue;
                }
                if sub_opcode == dw::DW_LNE_end_sequence {
                    if let Some(row) = held.take() {
                        table.push(row)?;
                    }
                    if table.addresses.len() > first_row {
                        table.sequences.push((u128::from(table.addresses[first_row]), address, first_row, table.addresses.len()));
                    }
                    first_row = table.addresses.len();
                    (address, file, line, column, discriminator) = (0, 1, 1, 0, 0);
                } else if sub_opcode == dw::DW_LNE_set_address {
                    if address != 0 {
                        return Err(Defer("a line program whose address steps back"));
                    }
                    address = 0;
                }
                input.skip(usize::try_from(operand_size).map_err(|_| Defer("operand size"))?)?;
            }
            _ => {
                let count = standard_lengths.get(usize::from(opcode) - 1).copied().unwrap_or(0);
                for _ in 0..count {
                    input.read_uleb128()?;
                }
            }
        }
        if address > u128::from(u64::MAX) {
            return Err(Defer("a line address past 64 bits"));
        }
    }
    if let Some(row) = held {
        table.push(row)?;
    }
    table.sequences.sort_unstable();
    // for_program's room, estimated from the program's length, given back: a lazy unit keeps its
    // table for the whole run.
    for column in [&mut table.file_indexes, &mut table.lines, &mut table.columns, &mut table.discriminators] {
        column.shrink_to_fit();
    }
    table.addresses.shrink_to_fit();
    Ok(table)
}

/// DW_LNE_set_discriminator's operand: a ULEB128 read within its bytes, modulo 2**32 as
/// llvm-symbolizer keeps it (the reference's `_discriminator`).
fn discriminator_within(operand: &[u8]) -> u32 {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    for &byte in operand {
        if shift < 32 {
            value |= u64::from(byte & 0x7F) << shift;
        }
        shift += 7;
        if byte < 0x80 {
            break;
        }
    }
    value as u32
}

#[cfg(test)]
mod tests {
    use super::join_path;

    #[test]
    fn paths_join_as_llvm_symbolizer_joins_them() {
        assert_eq!(join_path(Some("/src"), "a.c"), "/src/a.c");
        assert_eq!(join_path(Some("/src/"), "a.c"), "/src/a.c");
        assert_eq!(join_path(Some("/src"), "/abs/a.c"), "/abs/a.c");
        assert_eq!(join_path(Some("C:\\src"), "a.c"), "C:\\src\\a.c");
        assert_eq!(join_path(Some("/src"), "D:\\a.c"), "D:\\a.c");
        assert_eq!(join_path(Some(""), "a.c"), "a.c");
        assert_eq!(join_path(None, "a.c"), "a.c");
    }
}
