//! The DWARF line-number program state machine (DWARF 5, 6.2.5; DWARF 2-4, 6.2.5), the twin of
//! `_run_program` in `formats/dwarf/lines.py`, which stays the reference: this decoder gives the
//! same rows, sequences and errors for the same bytes, and where a value outgrows what 64 bits
//! hold exactly it gives up (`Outcome::Beyond`) and the reference decodes the program instead.
//!
//! Pure Rust over a byte slice, no Python types: every read goes through `Cursor`, which returns
//! `Failure::Cut` at the program's end instead of indexing, and every addition is checked.
//!
//! What it mirrors from the reference (read its docstring for why):
//! - a row is held back until the next one shows whether it repeats its address; unless
//!   `keep_every_row`, a row whose address the next row repeats is dropped (a dropped row with a
//!   negative line is an error there and then, since the caller checks only the rows kept);
//! - unless `keep_every_row`, an address that steps back inside a sequence stops the decode
//!   (`Outcome::StepsBack`, rows so far kept, the held row not);
//! - only special opcodes, `DW_LNS_copy`, `DW_LNE_end_sequence` and the program's end emit rows;
//!   `DW_LNE_end_sequence` records `(first row's address, address, first row, end row)`;
//! - errors: an instruction cut by the program's end; a line below 0 or at least 2**62 after a
//!   long (3+ byte) `DW_LNS_advance_line`; a column or file of at least 2**63 set by a multi-byte
//!   ULEB128.

/// The header fields the state machine reads (6.2.4), as `decode_line_table` passes them.
pub struct Header<'a> {
    pub addr_size: u64,
    pub little_endian: bool,
    pub min_length: u8,
    pub line_base: i8,
    pub line_range: u8,
    pub opcode_base: u8,
    pub standard_lengths: &'a [u64],
}

/// The rows and sequences decoded, indexes relative to the first row this decode produced.
#[derive(Default)]
pub struct Rows {
    pub addresses: Vec<u64>,
    pub files: Vec<i64>,
    pub lines: Vec<i64>,
    pub columns: Vec<i64>,
    /// Each row's discriminator (DW_LNE_set_discriminator), below 2**32.
    pub discriminators: Vec<i64>,
    /// (low, high, first row, end row)
    pub sequences: Vec<(u64, u64, usize, usize)>,
}

/// How a decode that raised no error ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every instruction decoded.
    Complete,
    /// An address stepped back inside a sequence (only when rows are being dropped).
    StepsBack,
    /// A value outgrew 64 bits; nothing of this decode may be used: the reference decides.
    Beyond,
}

/// The reference's DwarfFormatError cases; the messages are written by `message`.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    Cut,
    BelowLineZero,
    ColumnTooLarge(u64),
    FileTooLarge(u64),
    LineTooLarge(i128),
}

impl Failure {
    /// The reference's message for the program whose header starts at `offset`.
    pub fn message(&self, offset: u64) -> String {
        match self {
            Failure::Cut => format!("line program at {offset:#x} ends inside an instruction"),
            Failure::BelowLineZero => format!("line program at {offset:#x} steps below line 0"),
            Failure::ColumnTooLarge(column) => {
                format!("line program at {offset:#x} sets column {column}, too large to store")
            }
            Failure::FileTooLarge(file) => {
                format!("line program at {offset:#x} sets file {file}, too large to store")
            }
            Failure::LineTooLarge(line) => {
                format!("line program at {offset:#x} advances to line {line}, too large to store")
            }
        }
    }
}

const DW_LNS_COPY: u8 = 0x01;
const DW_LNS_ADVANCE_PC: u8 = 0x02;
const DW_LNS_ADVANCE_LINE: u8 = 0x03;
const DW_LNS_SET_FILE: u8 = 0x04;
const DW_LNS_SET_COLUMN: u8 = 0x05;
const DW_LNS_NEGATE_STMT: u8 = 0x06;
const DW_LNS_CONST_ADD_PC: u8 = 0x08;
const DW_LNS_FIXED_ADVANCE_PC: u8 = 0x09;
const DW_LNE_END_SEQUENCE: u8 = 0x01;
const DW_LNE_SET_ADDRESS: u8 = 0x02;
const DW_LNE_SET_DISCRIMINATOR: u8 = 0x04;

/// DW_LNE_set_discriminator's operand: a ULEB128 read within its bytes, modulo 2**32 as
/// llvm-symbolizer keeps it (the reference's `_discriminator`).
pub(crate) fn discriminator_within(operand: &[u8]) -> u32 {
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

/// A value of at most 64 bits, or `None` for one that needs more (`Outcome::Beyond`).
type Wide = Option<u64>;

/// Reads the program's bytes; running past the end is `Failure::Cut`, never an index panic.
struct Cursor<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Cursor<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, Failure> {
        let byte = *self.bytes.get(self.position).ok_or(Failure::Cut)?;
        self.position += 1;
        Ok(byte)
    }

    fn skip(&mut self, count: Wide) -> Result<(), Failure> {
        let remaining = (self.bytes.len() - self.position) as u64;
        match count {
            Some(count) if count <= remaining => {
                self.position += count as usize;
                Ok(())
            }
            // The reference reads byte by byte until the program ends.
            _ => {
                self.position = self.bytes.len();
                Err(Failure::Cut)
            }
        }
    }

    /// The rest of a ULEB128 number whose first byte, `first`, had the continuation bit.
    fn uleb_rest(&mut self, first: u8) -> Result<Wide, Failure> {
        let mut value = u64::from(first & 0x7F);
        let mut wide = false;
        let mut shift: u64 = 7;
        loop {
            let byte = self.byte()?;
            let payload = u64::from(byte & 0x7F);
            if shift < 64 {
                value |= payload << shift;
                // The payload's bits from position 64 on are lost above.
                wide |= shift > 57 && payload >> (64 - shift) != 0;
            } else {
                wide |= payload != 0;
            }
            if byte < 0x80 {
                return Ok(if wide { None } else { Some(value) });
            }
            shift = shift.saturating_add(7);
        }
    }

    /// Skips a ULEB128 number whose value nothing reads.
    fn skip_uleb(&mut self) -> Result<(), Failure> {
        while self.byte()? >= 0x80 {}
        Ok(())
    }

    /// An SLEB128 number whose first bytes, all with the continuation bit, gave `low` (`shift`
    /// bits); `None` when its value does not fit an i64.
    fn sleb_tail(&mut self, low: u64, mut shift: u64) -> Result<Option<i64>, Failure> {
        let mut bits = low;
        // Whether any bit from position 64 up to the final shift is one, or zero.
        let mut high_one = false;
        let mut high_zero = false;
        loop {
            let byte = self.byte()?;
            let payload = u64::from(byte & 0x7F);
            if shift + 7 <= 64 {
                bits |= payload << shift;
            } else {
                for bit in 0..7u64 {
                    let set = (payload >> bit) & 1 == 1;
                    match shift.checked_add(bit) {
                        Some(place) if place < 64 => bits |= u64::from(set) << place,
                        _ if set => high_one = true,
                        _ => high_zero = true,
                    }
                }
            }
            shift = shift.saturating_add(7);
            if byte < 0x80 {
                let negative = byte & 0x40 != 0;
                if shift < 64 {
                    return Ok(Some(if negative { (bits | (u64::MAX << shift)) as i64 } else { bits as i64 }));
                }
                // The value is bits - 2**shift (negative) or bits (positive) over all `shift` bits:
                // it fits when the bits from 63 up copy its sign.
                let sign = bits >> 63 == 1;
                let fits = if negative { sign && !high_zero } else { !sign && !high_one };
                return Ok(if fits { Some(bits as i64) } else { None });
            }
        }
    }
}

/// The row emitted last, held back until the next shows whether it repeats the address.
#[derive(Clone, Copy)]
struct Row {
    address: u64,
    file: u64,
    line: i64,
    column: u64,
    discriminator: u32,
}

impl Rows {
    fn push(&mut self, row: Row) {
        self.addresses.push(row.address);
        // File and column are below 2**63: checked where set.
        self.files.push(row.file as i64);
        self.lines.push(row.line);
        self.columns.push(row.column as i64);
        self.discriminators.push(i64::from(row.discriminator));
    }
}

/// Decodes `program` (the bytes from the first opcode to the program's end) into `rows`.
pub fn run(header: &Header, program: &[u8], keep_every_row: bool, rows: &mut Rows) -> Result<Outcome, Failure> {
    let opcode_base = header.opcode_base;
    let line_range = u64::from(header.line_range);
    // The caller checks line_range; a zero would divide by zero below (the reference raises there too).
    assert!(line_range != 0, "line_range 0");
    // The address and line advance of each special opcode (6.2.5.1), indexed by opcode.
    let mut address_advance = [0u64; 256];
    let mut line_advance = [0i64; 256];
    for opcode in u64::from(opcode_base)..256 {
        let adjusted = opcode - u64::from(opcode_base);
        address_advance[opcode as usize] = (adjusted / line_range) * u64::from(header.min_length);
        line_advance[opcode as usize] = i64::from(header.line_base) + (adjusted % line_range) as i64;
    }
    let const_add_pc = address_advance[255];

    let mut cursor = Cursor { bytes: program, position: 0 };
    let mut address: u64 = 0;
    let mut file: u64 = 1;
    let mut line: i64 = 1;
    let mut column: u64 = 0;
    let mut discriminator: u32 = 0;
    let mut first_row = rows.addresses.len();
    let mut held: Option<Row> = None;

    // Emits the row at the current state: the held one is kept unless it shares the address.
    macro_rules! emit {
        () => {{
            if let Some(previous) = held {
                if previous.address != address || keep_every_row {
                    rows.push(previous);
                } else if previous.line < 0 {
                    return Err(Failure::BelowLineZero);
                }
            }
            // A row takes the discriminator set since the last row, which then goes back to 0.
            held = Some(Row { address, file, line, column, discriminator });
            discriminator = 0;
        }};
    }
    macro_rules! wide {
        ($value:expr) => {
            match $value {
                Some(value) => value,
                None => return Ok(Outcome::Beyond),
            }
        };
    }

    while cursor.position < program.len() {
        let opcode = cursor.byte()?;
        if opcode >= opcode_base {
            address = wide!(address.checked_add(address_advance[opcode as usize]));
            line = wide!(line.checked_add(line_advance[opcode as usize]));
            emit!();
            continue;
        }
        match opcode {
            DW_LNS_SET_COLUMN => {
                let first = cursor.byte()?;
                column = u64::from(first);
                if first >= 0x80 {
                    column = wide!(cursor.uleb_rest(first)?);
                    if column >> 63 != 0 {
                        return Err(Failure::ColumnTooLarge(column));
                    }
                }
            }
            DW_LNS_ADVANCE_LINE => {
                let low = cursor.byte()?;
                let delta = if low < 0x80 {
                    i64::from(low) - if low & 0x40 != 0 { 0x80 } else { 0 }
                } else {
                    let high = cursor.byte()?;
                    if high < 0x80 {
                        let delta = i64::from(low & 0x7F) | i64::from(high) << 7;
                        delta - if high & 0x40 != 0 { 0x4000 } else { 0 }
                    } else {
                        let bits = u64::from(low & 0x7F) | u64::from(high & 0x7F) << 7;
                        let delta = wide!(cursor.sleb_tail(bits, 14)?);
                        // The reference checks lines after long advances only (62 bits, so that
                        // the short ones cannot carry a line past 63).
                        let advanced = i128::from(line) + i128::from(delta);
                        if advanced.unsigned_abs() >> 62 != 0 {
                            return Err(if advanced < 0 {
                                Failure::BelowLineZero
                            } else {
                                Failure::LineTooLarge(advanced)
                            });
                        }
                        line = advanced as i64;
                        continue;
                    }
                };
                line = wide!(line.checked_add(delta));
            }
            DW_LNS_COPY => emit!(),
            DW_LNS_NEGATE_STMT => {}
            DW_LNS_SET_FILE => {
                let first = cursor.byte()?;
                file = u64::from(first);
                if first >= 0x80 {
                    file = wide!(cursor.uleb_rest(first)?);
                    if file >> 63 != 0 {
                        return Err(Failure::FileTooLarge(file));
                    }
                }
            }
            0 => {
                let first = cursor.byte()?;
                let length = if first >= 0x80 { cursor.uleb_rest(first)? } else { Some(u64::from(first)) };
                if length == Some(0) {
                    continue;
                }
                let sub_opcode = cursor.byte()?;
                // None: a length past 2**64, longer than any program.
                let operand_size = length.map(|length| length - 1);
                if sub_opcode == DW_LNE_SET_ADDRESS && operand_size == Some(header.addr_size) {
                    let new_address = wide!(read_address(&mut cursor, header)?);
                    // Every other opcode only moves the address forward.
                    if new_address < address && !keep_every_row {
                        return Ok(Outcome::StepsBack);
                    }
                    address = new_address;
                    continue;
                }
                if sub_opcode == DW_LNE_SET_DISCRIMINATOR {
                    let start = cursor.position;
                    cursor.skip(operand_size)?;
                    discriminator = discriminator_within(&cursor.bytes[start..cursor.position]);
                    continue;
                }
                if sub_opcode == DW_LNE_END_SEQUENCE {
                    if let Some(previous) = held.take() {
                        rows.push(previous);
                    }
                    let row_count = rows.addresses.len();
                    if row_count > first_row {
                        rows.sequences.push((rows.addresses[first_row], address, first_row, row_count));
                    }
                    first_row = row_count;
                    address = 0;
                    file = 1;
                    line = 1;
                    column = 0;
                    discriminator = 0;
                } else if sub_opcode == DW_LNE_SET_ADDRESS {
                    if address != 0 && !keep_every_row {
                        return Ok(Outcome::StepsBack);
                    }
                    address = 0;
                }
                cursor.skip(operand_size)?;
            }
            DW_LNS_CONST_ADD_PC => address = wide!(address.checked_add(const_add_pc)),
            DW_LNS_ADVANCE_PC => {
                let first = cursor.byte()?;
                let advance = if first >= 0x80 { wide!(cursor.uleb_rest(first)?) } else { u64::from(first) };
                let advance = wide!(advance.checked_mul(u64::from(header.min_length)));
                address = wide!(address.checked_add(advance));
            }
            DW_LNS_FIXED_ADVANCE_PC => {
                // A uhalf operand, in the file's byte order like every other fixed-size value.
                let first = u64::from(cursor.byte()?);
                let second = u64::from(cursor.byte()?);
                let advance = if header.little_endian { first | second << 8 } else { first << 8 | second };
                address = wide!(address.checked_add(advance));
            }
            _ => {
                // basic_block, prologue/epilogue, isa and opcodes of later versions: none changes
                // which source position a row names, so their operands are skipped.
                let operands = header.standard_lengths.get(usize::from(opcode) - 1).copied().unwrap_or(0);
                for _ in 0..operands {
                    cursor.skip_uleb()?;
                }
            }
        }
    }
    if let Some(previous) = held {
        rows.push(previous);
    }
    Ok(Outcome::Complete)
}

/// The operand of DW_LNE_set_address: `addr_size` bytes in the unit's byte order; `None` when
/// it does not fit 64 bits (an address size above 8 with high bytes set).
fn read_address(cursor: &mut Cursor, header: &Header) -> Result<Wide, Failure> {
    let start = cursor.position;
    cursor.skip(Some(header.addr_size))?;
    let operand = &cursor.bytes[start..cursor.position];
    let mut value: u64 = 0;
    let mut wide = false;
    for index in 0..operand.len() {
        let byte = if header.little_endian { operand[operand.len() - 1 - index] } else { operand[index] };
        wide |= value >> 56 != 0;
        value = value << 8 | u64::from(byte);
    }
    Ok(if wide { None } else { Some(value) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(standard_lengths: &[u64]) -> Header<'_> {
        Header {
            addr_size: 8,
            little_endian: true,
            min_length: 1,
            line_base: -5,
            line_range: 14,
            opcode_base: 13,
            standard_lengths,
        }
    }

    fn decode(program: &[u8], keep_every_row: bool) -> (Result<Outcome, Failure>, Rows) {
        let lengths = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
        let mut rows = Rows::default();
        let outcome = run(&header(&lengths), program, keep_every_row, &mut rows);
        (outcome, rows)
    }

    #[test]
    fn a_discriminator_is_read_within_its_operand_modulo_2_to_the_32() {
        assert_eq!(discriminator_within(&[0x05]), 5);
        assert_eq!(discriminator_within(&[0x85, 0x01]), 0x85);
        assert_eq!(discriminator_within(&[0x85]), 5); // cut by the operand's length
        assert_eq!(discriminator_within(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F]), u32::MAX);
        assert_eq!(discriminator_within(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), 0); // bit 35 dropped
        assert_eq!(discriminator_within(&[0x07, 0xFF]), 7); // bytes after the end are skipped
    }

    #[test]
    fn long_lebs_decode_exactly_or_give_up() {
        let mut cursor = Cursor { bytes: &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], position: 0 };
        // 0x7F 0x7F as the first two bytes, then nine all-ones bytes: -1 over 77 bits.
        assert_eq!(cursor.sleb_tail((1 << 14) - 1, 14), Ok(Some(-1)));
        let mut cursor = Cursor { bytes: &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], position: 0 };
        assert_eq!(cursor.sleb_tail(0, 14), Ok(None)); // 2**70
        let mut cursor = Cursor { bytes: &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], position: 0 };
        assert_eq!(cursor.uleb_rest(0x80), Ok(Some(1 << 63)));
        let mut cursor = Cursor { bytes: &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02], position: 0 };
        assert_eq!(cursor.uleb_rest(0x80), Ok(None)); // 2**64
        let mut cursor = Cursor { bytes: &[0x80, 0x80], position: 0 };
        assert_eq!(cursor.uleb_rest(0x80), Err(Failure::Cut));
    }

    #[test]
    fn a_row_that_the_next_repeats_is_dropped_unless_every_row_is_kept() {
        // set_address 0x1000, copy, copy, special (address +1), end_sequence.
        let program = [0, 9, 2, 0, 0x10, 0, 0, 0, 0, 0, 0, 1, 1, 13 + 5 + 14, 0, 1, 1];
        let (outcome, rows) = decode(&program, false);
        assert_eq!(outcome, Ok(Outcome::Complete));
        assert_eq!(rows.addresses, [0x1000, 0x1001]);
        assert_eq!(rows.sequences, [(0x1000, 0x1001, 0, 2)]);
        let (_, rows) = decode(&program, true);
        assert_eq!(rows.addresses, [0x1000, 0x1000, 0x1001]);
    }

    #[test]
    fn an_address_past_64_bits_is_left_to_the_reference() {
        let program = [0, 9, 2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, DW_LNS_CONST_ADD_PC];
        assert_eq!(decode(&program, false).0, Ok(Outcome::Beyond));
    }
}
