//! A PDB module stream decoded for lookups: the twin of `formats/pdb/module_stream.py`'s `PythonModule`
//! (`decode_module_stream`, `procedure_at`, `line_at`, and `inline.py`'s `sites_in`, `site_chain`) and of
//! `formats/pdb/codeview.py`'s `iter_subsections`, `parse_lines`, `parse_checksums`,
//! `parse_inlinee_lines`, `next_symbol_record_of`, `after_closing_record` and `annotation_rows`.
//!
//! The Python code stays the reference (tests/test_pdb_native.py compares both on every PDB
//! fixture and on mutated streams, errors included). Same layouts (LLVM's "The Module Information
//! Stream", "CodeView Symbol Records", cvinfo.h's binary annotations), same order of checks, same
//! `CodeViewError(message, offset)` where the reference raises one. Every read is bounds-checked
//! (`get`), sums are 64- or 128-bit, so no input overflows; a panic would be caught and raised as
//! `CodeViewError` too. Names are handed back as bytes: Python decodes them as the reference does.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustc_hash::FxHashMap;

use crate::dwarf::Section;
use crate::unpanicked;

pyo3::import_exception!(symbolize.formats.pdb.codeview, CodeViewError);

const S_END: u16 = 0x0006;
const S_PROC_ID_END: u16 = 0x114F;
const S_INLINESITE: u16 = 0x114D;
const S_INLINESITE_END: u16 = 0x114E;
const S_INLINESITE2: u16 = 0x115D;
const PROC_KINDS: [u16; 6] = [0x110F, 0x1110, 0x1146, 0x1147, 0x1155, 0x1156];
const DEBUG_S_LINES: u32 = 0xF2;
const DEBUG_S_FILECHKSMS: u32 = 0xF4;
const DEBUG_S_INLINEELINES: u32 = 0xF6;
const DEBUG_S_IGNORE: u32 = 0x8000_0000;
const CV_LINES_HAVE_COLUMNS: u16 = 0x0001;
const PROC_HEADER: usize = 35; // Parent, End, Next, CodeSize, DbgStart, DbgEnd, Type, CodeOffset, Segment, Flags
const MAX_INLINE_DEPTH: usize = 64;

/// A CodeViewError to raise: the reference's message and offset.
struct Failure {
    message: String,
    offset: u64,
}

fn fail<T>(message: impl Into<String>, offset: u64) -> Result<T, Failure> {
    Err(Failure { message: message.into(), offset })
}

/// The little-endian u16 at `position`, or 0 where it runs past `data`; `u32_at` alike.
pub(crate) fn u16_at(data: &[u8], position: u64) -> u16 {
    let at = position as usize;
    data.get(at..at + 2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(data: &[u8], position: u64) -> u32 {
    let at = position as usize;
    data.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// `data[start:end]`, clamped as a Python slice is.
fn slice(data: &[u8], start: u64, end: u64) -> &[u8] {
    let length = data.len() as u64;
    let start = start.min(length) as usize;
    let end = (end.min(length) as usize).max(start);
    &data[start..end]
}

struct Record<'a> {
    offset: u64,
    kind: u16,
    body: &'a [u8],
}

/// `next_symbol_record_of`: the first record of `kinds` in `stream[start:end]`, every record's
/// length checked on the way.
fn next_record_of<'a>(stream: &'a [u8], start: u64, end: u64, kinds: &[u16]) -> Result<Option<Record<'a>>, Failure> {
    let mut position = start;
    while position + 4 <= end {
        let length = u64::from(u16_at(stream, position));
        let kind = u16_at(stream, position + 2);
        if length < 2 {
            return fail(format!("symbol record of length {length}"), position);
        }
        if position + 2 + length > end {
            return fail("symbol record runs past the module's symbols", position);
        }
        if kinds.contains(&kind) {
            return Ok(Some(Record { offset: position, kind, body: slice(stream, position + 4, position + 2 + length) }));
        }
        position += 2 + length;
    }
    Ok(None)
}

/// `after_closing_record`: the offset after the closing record at `end_offset`, if one is there.
fn after_closing(stream: &[u8], end_offset: u64, body_start: u64, end: u64, kinds: &[u16]) -> Option<u64> {
    if end < 4 || !(body_start <= end_offset && end_offset <= end - 4) {
        return None;
    }
    let length = u64::from(u16_at(stream, end_offset));
    let kind = u16_at(stream, end_offset + 2);
    if !kinds.contains(&kind) || end_offset + 2 + length > end {
        return None;
    }
    Some(end_offset + 2 + length)
}

struct Procedure {
    low: i128,
    high: i128,
    name: Vec<u8>,
    body_start: u64,
    end_offset: u64,
}

/// An inline site, its rows (vaddrs) and the sites nested in its body, decoded whole (for the
/// index build: `cut_points`, `locate_many`; one lookup reads only the chain holding its address).
struct Site {
    inlinee: u32,
    rows: Vec<(i128, i128, i64, u32)>,
    children: Vec<Site>,
}

/// A row of the line table: its vaddr, whether it ends its block, and its (line, column, file ID).
type LineRow = (i128, bool, (i64, i64, u32));

/// A file block of a DEBUG_S_LINES fragment, its rows read in place: `rows` holds `count`
/// (offset, line) pairs, then as many columns where the fragment has them.
struct Block<'a> {
    file_id: u32,
    count: u64,
    rows: &'a [u8],
    has_columns: bool,
}

impl Block<'_> {
    fn offset(&self, row: u64) -> u32 {
        u32_at(self.rows, 8 * row)
    }

    fn line(&self, row: u64) -> i64 {
        i64::from(u32_at(self.rows, 8 * row + 4) & 0xFF_FFFF)
    }

    fn column(&self, row: u64) -> i64 {
        if self.has_columns {
            i64::from(u16_at(self.rows, 8 * self.count + 4 * row))
        } else {
            0
        }
    }
}

/// A block with rows, and the vaddrs its fragment's code spans.
type Group<'a> = (i128, i128, Block<'a>);

/// `parse_lines`: each block with rows added to `groups`, where `place` (section, offset) gives the
/// fragment's vaddr (a subsection that fails fails its whole module, so groups added before do not
/// matter).
fn parse_lines<'a>(
    data: &'a [u8], subsection_offset: u64, place: impl Fn(u16, u32) -> Option<i128>, groups: &mut Vec<Group<'a>>,
) -> Result<(), Failure> {
    let size = data.len() as u64;
    if size < 12 {
        return fail("DEBUG_S_LINES header is truncated", subsection_offset);
    }
    let base = place(u16_at(data, 4), u32_at(data, 0));
    let code_size = u32_at(data, 8);
    let has_columns = u16_at(data, 6) & CV_LINES_HAVE_COLUMNS != 0;
    let mut position: u64 = 12;
    while position + 12 <= size {
        let file_id = u32_at(data, position);
        let count = u64::from(u32_at(data, position + 4));
        let block_size = u64::from(u32_at(data, position + 8));
        let row_bytes = count * if has_columns { 12 } else { 8 };
        if block_size < 12 + row_bytes || position + block_size > size {
            return fail(format!("line block of {count} rows does not fit its {block_size} bytes"), subsection_offset);
        }
        let rows = slice(data, position + 12, position + block_size); // holds the rows (checked above)
        if let (Some(base), true) = (base, count > 0) {
            groups.push((base, base + i128::from(code_size), Block { file_id, count, rows, has_columns }));
        }
        position += block_size;
    }
    Ok(())
}

/// `parse_inlinee_lines`, each entry added to `found` unless its inlinee is there already (a
/// subsection that fails fails its whole module, so entries added before do not matter).
fn parse_inlinee_lines(data: &[u8], subsection_offset: u64, found: &mut FxHashMap<u32, (u32, u32)>) -> Result<(), Failure> {
    let size = data.len() as u64;
    if size < 4 {
        return fail("DEBUG_S_INLINEELINES is truncated", subsection_offset);
    }
    let extra_files = u32_at(data, 0) == 1;
    found.reserve(data.len() / 12);
    let mut position: u64 = 4;
    while position + 12 <= size {
        found.entry(u32_at(data, position)).or_insert((u32_at(data, position + 4), u32_at(data, position + 8)));
        position += 12;
        if extra_files {
            if position + 4 > size {
                return fail("inlinee entry's extra file count is truncated", subsection_offset);
            }
            position += 4 + 4 * u64::from(u32_at(data, position));
        }
    }
    Ok(())
}

/// One CVCompressData integer at `position`, and the position after it; None where it is cut
/// off or malformed (the reference's CodeViewError, which leaves the site without rows).
fn compressed(data: &[u8], position: usize) -> Option<(u32, usize)> {
    let first = *data.get(position)?;
    if first < 0x80 {
        return Some((u32::from(first), position + 1));
    }
    if first & 0xC0 == 0x80 {
        let second = *data.get(position + 1)?;
        return Some((u32::from(first & 0x3F) << 8 | u32::from(second), position + 2));
    }
    if first & 0xE0 == 0xC0 {
        let rest = data.get(position + 1..position + 4)?;
        let value = u32::from(first & 0x1F) << 24 | u32::from(rest[0]) << 16 | u32::from(rest[1]) << 8 | u32::from(rest[2]);
        return Some((value, position + 4));
    }
    None
}

fn signed(value: u32) -> i64 {
    let half = i64::from(value >> 1);
    if value & 1 != 0 {
        -half
    } else {
        half
    }
}

/// `annotation_rows`: (low, high, line, file) rows, their code offsets added to `base`; None where the
/// reference raises.
fn annotation_rows(data: &[u8], base: i128, first_line: u32, file_id: u32) -> Option<Vec<(i128, i128, i64, u32)>> {
    let mut rows = Vec::new();
    let at = |offset: i64| base + i128::from(offset);
    let mut code: i64 = 0;
    let mut line = i64::from(first_line);
    let mut file = file_id;
    let mut open: Option<(i64, i64, u32)> = None; // (low, line, file) of the row without its end yet
    // A row (low, line, file) ended at `high`, kept where it holds an address.
    let close = |rows: &mut Vec<_>, row: Option<(i64, i64, u32)>, high: i64| {
        if let Some((low, line, file)) = row.filter(|row| high > row.0) {
            rows.push((at(low), at(high), line, file));
        }
    };
    let mut position = 0;
    while position < data.len() {
        let (opcode, next) = compressed(data, position)?;
        position = next;
        if opcode == 0 {
            return Some(rows);
        }
        if opcode > 13 {
            return None;
        }
        let (operand, next) = compressed(data, position)?;
        position = next;
        let mut second = 0;
        if opcode == 12 {
            let (value, next) = compressed(data, position)?;
            second = value;
            position = next;
        }
        let operand64 = i64::from(operand);
        match opcode {
            1..=3 | 11 => {
                if opcode == 11 {
                    line += signed(operand >> 4);
                    code += operand64 & 0xF;
                } else {
                    code += operand64;
                }
                close(&mut rows, open, code);
                open = Some((code, line, file));
            }
            4 => {
                close(&mut rows, open.take(), code + operand64);
                code += operand64;
            }
            12 => {
                // A row of its own, [code + delta, + length); the offset stays at its start.
                code += i64::from(second);
                close(&mut rows, open.take(), code);
                close(&mut rows, Some((code, line, file)), code + operand64);
            }
            6 => line += signed(operand),
            5 => file = operand,
            _ => {}
        }
    }
    Some(rows)
}

struct Decoded {
    symbols_end: u64,
    procedures: Vec<Procedure>,
    lows: Vec<i128>,
    reach: Vec<i128>,
    lines: Vec<LineRow>,
    checksums: Vec<(u64, u32)>,
    inlinee_lines: FxHashMap<u32, (u32, u32)>,
}

fn vaddr_of(sections: &[u64], image_base: i128, section: u16, offset: u32) -> Option<i128> {
    if section == 0 || usize::from(section) > sections.len() {
        return None;
    }
    Some(image_base + i128::from(sections[usize::from(section) - 1]) + i128::from(offset))
}

/// `decode_module_stream`, in the reference's order: the C13 subsections, then the procedures.
fn decode(
    stream: &[u8],
    symbols_size: u64,
    c11_size: u64,
    c13_size: u64,
    sections: &[u64],
    image_base: i128,
) -> Result<Decoded, Failure> {
    let symbols_end = symbols_size;
    let c13_start = symbols_end.saturating_add(c11_size);
    let c13_end = c13_start.saturating_add(c13_size);
    let length = stream.len() as u64;
    if c13_end > length || (symbols_end < 4 && symbols_size != 0) {
        return fail(
            format!("symbols, C11 and C13 sizes ({symbols_size}, {c11_size}, {c13_size}) exceed the {length}-byte stream"),
            0,
        );
    }
    let mut checksums = Vec::new();
    let mut inlinee_lines = FxHashMap::default();
    let place = |section, offset| vaddr_of(sections, image_base, section, offset);
    let mut groups: Vec<Group> = Vec::new();
    let mut position = c13_start;
    while position + 8 <= c13_end {
        let kind = u32_at(stream, position);
        let size = u64::from(u32_at(stream, position + 4));
        if position + 8 + size > c13_end {
            return fail(format!("C13 subsection {kind:#x} of {size} bytes runs past the module"), position);
        }
        if kind & DEBUG_S_IGNORE == 0 {
            let data = slice(stream, position + 8, position + 8 + size);
            match kind {
                DEBUG_S_LINES => parse_lines(data, position, place, &mut groups)?,
                DEBUG_S_FILECHKSMS => {
                    let mut at: u64 = 0;
                    while at + 6 <= size {
                        checksums.push((at, u32_at(data, at)));
                        let checksum_size = u64::from(data.get(at as usize + 4).copied().unwrap_or(0));
                        at = (at + 6 + checksum_size + 3) & !3;
                    }
                }
                DEBUG_S_INLINEELINES => parse_inlinee_lines(data, position, &mut inlinee_lines)?,
                _ => {}
            }
        }
        position += 8 + ((size + 3) & !3);
    }

    let mut procedures = Vec::new();
    let mut position = if symbols_end >= 4 { 4 } else { 0 };
    while let Some(record) = next_record_of(stream, position, symbols_end, &PROC_KINDS)? {
        let body_start = record.offset + 2 + u64::from(u16_at(stream, record.offset));
        position = body_start;
        let body = record.body;
        if body.len() < PROC_HEADER {
            return fail("procedure record is truncated", record.offset);
        }
        let end_offset = u64::from(u32_at(body, 4));
        let size = u32_at(body, 12);
        let offset = u32_at(body, 28);
        let section = u16_at(body, 32);
        let name_end = body[PROC_HEADER..].iter().position(|byte| *byte == 0).map_or(body.len(), |at| PROC_HEADER + at);
        if let Some(low) = place(section, offset) {
            let name = body[PROC_HEADER..name_end].to_vec();
            procedures.push(Procedure { low, high: low + i128::from(size), name, body_start, end_offset });
        }
        if let Some(closing) = after_closing(stream, end_offset, body_start, symbols_end, &[S_END, S_PROC_ID_END]) {
            position = closing;
        }
    }
    procedures.sort_by_key(|procedure| procedure.low); // stable, as list.sort
    let lows = procedures.iter().map(|procedure| procedure.low).collect();
    let reach = procedures.iter().scan(i128::MIN, |running, procedure| {
        *running = (*running).max(procedure.high); // the highest high of the procedures so far
        Some(*running)
    }).collect();

    groups.sort_by_key(|group| group.0);
    let entries = groups.iter().map(|group| group.2.count as usize + 2).sum();
    let mut lines = Vec::with_capacity(entries);
    for (base, end, block) in groups {
        // The block's rows between a first at its base and a terminal one at its code's end, which
        // repeat its first and last rows.
        let row = |vaddr, row, terminal| (vaddr, terminal, (block.line(row), block.column(row), block.file_id));
        lines.push(row(base, 0, false));
        lines.extend((0..block.count).map(|at| row(base + i128::from(block.offset(at)), at, false)));
        lines.push(row(end, block.count - 1, true));
    }
    Ok(Decoded { symbols_end, procedures, lows, reach, lines, checksums, inlinee_lines })
}

/// An inline site record of `stream[..end]` read: (inlinee, annotations, body start, body end,
/// where the scan of its level resumes); the reference's CodeViewError for a truncated record.
fn site_record<'a>(stream: &[u8], record: &Record<'a>, end: u64) -> Result<(u32, &'a [u8], u64, u64, u64), Failure> {
    let header = 12 + if record.kind == S_INLINESITE2 { 4 } else { 0 };
    if record.body.len() < header {
        return fail("inline site record is truncated", record.offset);
    }
    let end_offset = u64::from(u32_at(record.body, 4));
    let body_start = record.offset + 2 + u64::from(u16_at(stream, record.offset));
    let closing = after_closing(stream, end_offset, body_start, end, &[S_INLINESITE_END]);
    let body_end = if closing.is_some() { end_offset } else { body_start };
    Ok((u32_at(record.body, 8), &record.body[header..], body_start, body_end, closing.unwrap_or(body_start)))
}

/// The rows of an inline site of `inlinee`, at vaddrs (none where its annotations do not decode).
fn site_rows(decoded: &Decoded, annotations: &[u8], base: i128, inlinee: u32) -> Vec<(i128, i128, i64, u32)> {
    let (file_id, first_line) = decoded.inlinee_lines.get(&inlinee).copied().unwrap_or((0, 0));
    annotation_rows(annotations, base, first_line, file_id).unwrap_or_default()
}

/// `sites_in`: the inline sites directly in `stream[start:end]`, their rows and nested sites
/// decoded (a nested body that does not decode leaves its site without nested sites).
fn sites_in(
    decoded: &Decoded,
    stream: &[u8],
    base: i128,
    start: u64,
    end: u64,
    level: usize,
) -> Result<Vec<Site>, Failure> {
    if level > MAX_INLINE_DEPTH {
        return fail(format!("inline sites nested more than {MAX_INLINE_DEPTH} deep"), start);
    }
    let mut sites = Vec::new();
    let mut position = start;
    while let Some(record) = next_record_of(stream, position, end, &[S_INLINESITE, S_INLINESITE2])? {
        let (inlinee, annotations, body_start, body_end, next) = site_record(stream, &record, end)?;
        let rows = site_rows(decoded, annotations, base, inlinee);
        let children = sites_in(decoded, stream, base, body_start, body_end, level + 1).unwrap_or_default();
        sites.push(Site { inlinee, rows, children });
        position = next;
    }
    Ok(sites)
}

/// The chain of inline sites holding `vaddr` in a procedure's body `stream[start:end]`, outermost
/// first, as (inlinee, line, file ID of the first row holding it): what walking the tree of
/// `sites_in` finds (at each level the first site with a row holding it), without decoding the
/// sites that do not hold it. Each level is still scanned whole: a record of it that does not
/// decode leaves the level without sites there too.
fn chain_at(decoded: &Decoded, stream: &[u8], base: i128, mut start: u64, mut end: u64, vaddr: i128) -> Vec<(u32, i64, u32)> {
    let mut chain = Vec::new();
    for _level in 0..=MAX_INLINE_DEPTH {
        let mut holding = None;
        let mut position = start;
        let scanned: Result<(), Failure> = (|| {
            while let Some(record) = next_record_of(stream, position, end, &[S_INLINESITE, S_INLINESITE2])? {
                let (inlinee, annotations, body_start, body_end, next) = site_record(stream, &record, end)?;
                if holding.is_none() {
                    let rows = site_rows(decoded, annotations, base, inlinee);
                    if let Some(row) = rows.iter().find(|row| row.0 <= vaddr && vaddr < row.1) {
                        holding = Some(((inlinee, row.2, row.3), body_start, body_end));
                    }
                }
                position = next;
            }
            Ok(())
        })();
        let (Ok(()), Some((site, body_start, body_end))) = (scanned, holding) else { break };
        chain.push(site);
        (start, end) = (body_start, body_end);
    }
    chain
}

/// `line_at`: the position of the row holding `vaddr`, found as the reference finds it.
fn line_at(rows: &[LineRow], vaddr: i128) -> Option<usize> {
    let (mut low, mut high) = (0usize, rows.len());
    while low < high {
        let middle = (low + high) / 2;
        if rows[middle].0 < vaddr || (rows[middle].0 == vaddr && rows[middle].1) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    let mut position = low;
    if position == rows.len() || rows[position].0 > vaddr {
        if position == 0 || rows[position - 1].1 {
            return None;
        }
        position -= 1;
    }
    while position < rows.len() && rows[position].1 {
        position += 1;
    }
    (position < rows.len()).then_some(position)
}

type Located = (Option<usize>, Option<(i64, i64, u32)>, Vec<(u32, u32, i64)>);

/// A decoded module stream answering lookups (`PythonModule`'s twin, for `CompiledModule`).
#[pyclass(module = "symbolize.formats._kernels")]
pub struct PdbModule {
    stream: Section, // the module stream (a view of the PDB's mmap, or bytes), held for the inline sites read later
    decoded: Decoded,
}

/// `f` run with a panic caught and raised as CodeViewError (the reader's typed error follows).
fn caught<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    unpanicked("decoder", f).map_err(|message| CodeViewError::new_err((message, 0)))
}

impl PdbModule {
    fn procedure_at(&self, vaddr: i128) -> Option<usize> {
        let decoded = &self.decoded;
        let stop = decoded.lows.partition_point(|low| *low <= vaddr);
        let first = decoded.reach[..stop].partition_point(|reach| *reach <= vaddr);
        (first..stop).find(|candidate| vaddr < decoded.procedures[*candidate].high)
    }

    /// The inline sites of `procedure`, decoded whole; a body whose records do not decode leaves
    /// it without inline sites.
    fn sites_of(&self, procedure: &Procedure) -> Vec<Site> {
        let end = procedure.end_offset.min(self.decoded.symbols_end);
        sites_in(&self.decoded, &self.stream, procedure.low, procedure.body_start, end, 0).unwrap_or_default()
    }

    /// `locate`: the chain of inline sites read by `chain_at`, or, given `tree`, walked in the
    /// procedure's whole site tree, decoded once for the run of addresses asked in it (the index
    /// build asks every piece of a procedure, in order).
    fn locate_one(&self, vaddr: i128, tree: Option<&mut Option<(usize, Vec<Site>)>>) -> Located {
        let position = self.procedure_at(vaddr);
        let line = line_at(&self.decoded.lines, vaddr).map(|at| self.decoded.lines[at].2);
        let mut inlined = Vec::new();
        if let Some(position) = position {
            let procedure = &self.decoded.procedures[position];
            let chain = match tree {
                None => {
                    let end = procedure.end_offset.min(self.decoded.symbols_end);
                    chain_at(&self.decoded, &self.stream, procedure.low, procedure.body_start, end, vaddr)
                }
                Some(tree) => {
                    if tree.as_ref().is_none_or(|(at, _)| *at != position) {
                        *tree = Some((position, self.sites_of(procedure)));
                    }
                    let mut chain = Vec::new();
                    let mut level = tree.as_ref().map_or(&[][..], |(_, sites)| &sites[..]);
                    while chain.len() <= MAX_INLINE_DEPTH {
                        let holding = level.iter().find_map(|site| {
                            site.rows.iter().find(|row| row.0 <= vaddr && vaddr < row.1).map(|row| (site, row))
                        });
                        let Some((site, row)) = holding else { break };
                        chain.push((site.inlinee, row.2, row.3));
                        level = &site.children;
                    }
                    chain
                }
            };
            for (inlinee, line, file_id) in chain.into_iter().rev() {
                if !self.decoded.inlinee_lines.contains_key(&inlinee) {
                    break;
                }
                inlined.push((inlinee, file_id, line));
            }
        }
        (position, line, inlined)
    }
}

#[pymethods]
impl PdbModule {
    /// (position of the procedure holding `vaddr` or None, (line, column, file ID) of the row
    /// holding it or None, [(inlinee, file ID, line)] of the inline sites holding it, innermost
    /// first, stopping at the first inlinee without DEBUG_S_INLINEELINES entry).
    fn locate(&self, vaddr: i128) -> PyResult<Located> {
        caught(|| self.locate_one(vaddr, None))
    }

    /// `locate` of each vaddr.
    fn locate_many(&self, vaddrs: Vec<i128>) -> PyResult<Vec<Located>> {
        let mut tree = None;
        caught(|| vaddrs.iter().map(|vaddr| self.locate_one(*vaddr, Some(&mut tree))).collect())
    }

    /// (low, high, name as bytes) of procedure `position` (by low).
    fn procedure<'py>(&self, py: Python<'py>, position: usize) -> Option<(i128, i128, Bound<'py, PyBytes>)> {
        let procedure = self.decoded.procedures.get(position)?;
        Some((procedure.low, procedure.high, PyBytes::new(py, &procedure.name)))
    }

    /// The procedures' count.
    fn procedure_count(&self) -> usize {
        self.decoded.procedures.len()
    }

    /// (entry offset, /names offset) of each DEBUG_S_FILECHKSMS entry, in stream order.
    fn checksums(&self) -> Vec<(u64, u32)> {
        self.decoded.checksums.clone()
    }

    /// Where answers may change: procedure bounds, every inline site row's bounds, line entries
    /// (and one past an address two entries share), unsorted, with repeats.
    fn cut_points(&self) -> PyResult<Vec<i128>> {
        caught(|| {
            let mut cuts = Vec::new();
            for procedure in &self.decoded.procedures {
                cuts.push(procedure.low);
                cuts.push(procedure.high);
                let sites = self.sites_of(procedure);
                let mut pending: Vec<&Site> = sites.iter().collect();
                while let Some(site) = pending.pop() {
                    pending.extend(site.children.iter());
                    for row in &site.rows {
                        cuts.push(row.0);
                        cuts.push(row.1);
                    }
                }
            }
            let lines = &self.decoded.lines;
            cuts.extend(lines.iter().map(|row| row.0));
            cuts.extend(lines.windows(2).filter(|pair| pair[0].0 == pair[1].0).map(|pair| pair[0].0 + 1));
            cuts
        })
    }
}

/// The twin of `decode_module_stream`: `stream` (a module stream) decoded with the image's
/// section RVAs (section N is `section_rvas[N - 1]`) and ImageBase; raises CodeViewError as the
/// reference does.
#[pyfunction]
fn decode_pdb_module(
    py: Python<'_>,
    stream: Bound<'_, PyAny>,
    symbols_size: u64,
    c11_size: u64,
    c13_size: u64,
    section_rvas: Vec<u64>,
    image_base: i128,
) -> PyResult<PdbModule> {
    let stream = Section::borrow(&stream)?;
    let bytes: &[u8] = &stream;
    match py.detach(|| caught(|| decode(bytes, symbols_size, c11_size, c13_size, &section_rvas, image_base)))? {
        Ok(decoded) => Ok(PdbModule { stream, decoded }),
        Err(failure) => Err(CodeViewError::new_err((failure.message, failure.offset))),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PdbModule>()?;
    module.add_function(wrap_pyfunction!(decode_pdb_module, module)?)?;
    Ok(())
}
