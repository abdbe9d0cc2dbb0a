//! A unit's answer runs, as `UnitRuns.all_runs` builds them (`formats/dwarf/answers.py`): which
//! top-level function owns which addresses (`owned_pieces`: the greater low wins, then the later
//! DIE), the inline level that holds each address (the first child in DIE order whose ranges hold
//! it), the line sequence answering there, and the cuts where the covering symbol changes
//! (`_sweep`), one run per line row. Heads are numbered as the reference numbers them: by first
//! use, per (innermost node, covering symbol).
//!
//! Nothing here parses: it is the reference's answer policy over what `tree`, `lines` and the
//! symbol table give. `SymbolBounds` is the symbol table's starts and stops, read once per file.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use pyo3::prelude::*;

use super::lines::LineTable;
pub(crate) use super::names::{Name, Text};
use super::names::{Namer, NamerCaches, NodeFacts};
use super::unit::UnitData;
use super::tree::Tree;
use super::{Decided, Defer};

const ADDRESS_MAX: u128 = u64::MAX as u128;
/// Past every address: the end of the span after a unit's last function.
const END: u128 = 1 << 65;

/// Start and stop of every symbol (`SymbolIndex.starts`, `.stops`), read once per file.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct SymbolBounds {
    pub(crate) starts: Vec<u128>,
    pub(crate) stops: Vec<u128>,
}

#[pymethods]
impl SymbolBounds {
    #[new]
    fn new(starts: Vec<u128>, stops: Vec<u128>) -> PyResult<Self> {
        if starts.len() != stops.len() {
            return Err(pyo3::exceptions::PyValueError::new_err("starts and stops differ in length"));
        }
        Ok(SymbolBounds { starts, stops })
    }
}

impl SymbolBounds {
    /// `SymbolIndex.pieces`: `[low, high)` cut where the covering symbol changes.
    pub(crate) fn pieces(&self, low: u128, high: u128, out: &mut Vec<(u128, u128, i64)>) {
        out.clear();
        let starts = &self.starts;
        let mut position = starts.partition_point(|start| *start <= low).saturating_sub(1);
        let mut cursor = low;
        while position < starts.len() && starts[position] < high && cursor < high {
            let (mut start, stop) = (starts[position].max(low), self.stops[position].min(high));
            if stop > cursor && start < stop {
                if cursor < start {
                    out.push((cursor, start, -1));
                }
                start = start.max(cursor);
                out.push((start, stop, position as i64));
                cursor = stop;
            }
            position += 1;
        }
        if cursor < high {
            out.push((cursor, high, -1));
        }
    }

    /// `pieces` for pieces visited in address order: `cursor` keeps the first symbol that may still
    /// cover one, so the common cases (no symbol there, one symbol covering the whole piece) cost
    /// no search.
    pub(crate) fn pieces_in_order(&self, cursor: &mut usize, low: u128, high: u128, out: &mut Vec<(u128, u128, i64)>) {
        let (starts, stops) = (&self.starts, &self.stops);
        while *cursor < starts.len() && stops[*cursor] <= low {
            *cursor += 1;
        }
        if *cursor >= starts.len() || starts[*cursor] >= high {
            out.clear();
            out.push((low, high, -1));
        } else if starts[*cursor] <= low && high <= stops[*cursor] {
            out.clear();
            out.push((low, high, *cursor as i64));
        } else {
            self.pieces(low, high, out);
        }
    }
}

/// `formats.answers.owned_pieces`: `(low, high, item)` where, of the ranges holding an address,
/// the one of least rank owns it; in address order, adjacent pieces of one item joined.
pub(crate) fn owned_pieces<A: Copy + Ord, T: Copy + PartialEq>(owners: &[(A, A, i64, T)]) -> Vec<(A, A, T)> {
    let mut starts = owners.to_vec();
    starts.sort_by_key(|owner| (owner.0, owner.2)); // stable, as Python's sorted
    let mut pieces: Vec<(A, A, T)> = Vec::new();
    let push = |pieces: &mut Vec<(A, A, T)>, low: A, high: A, item: T| match pieces.last_mut() {
        Some(last) if last.1 == low && last.2 == item => last.1 = high,
        _ => pieces.push((low, high, item)),
    };
    if starts.windows(2).all(|pair| pair[0].1 <= pair[1].0) {
        for &(low, high, _, item) in &starts {
            if low < high {
                push(&mut pieces, low, high, item);
            }
        }
        return pieces;
    }
    let mut points: Vec<A> = owners.iter().flat_map(|owner| [owner.0, owner.1]).collect();
    points.sort_unstable();
    points.dedup();
    let mut active: BinaryHeap<Reverse<(i64, A, usize)>> = BinaryHeap::new();
    let mut next_start = 0;
    for pair in points.windows(2) {
        let (low, high) = (pair[0], pair[1]);
        while next_start < starts.len() && starts[next_start].0 <= low {
            active.push(Reverse((starts[next_start].2, starts[next_start].1, next_start)));
            next_start += 1;
        }
        while active.peek().is_some_and(|top| top.0 .1 <= low) {
            active.pop();
        }
        let Some(top) = active.peek() else { continue };
        push(&mut pieces, low, high, starts[top.0 .2].3);
    }
    pieces
}

/// The unit's runs, column by column, and what their heads and files name.
#[derive(Default)]
pub(crate) struct Columns {
    pub lows: Vec<u64>,
    pub highs: Vec<u64>,
    pub files: Vec<i64>,
    pub lines: Vec<i64>,
    pub columns: Vec<i64>,
    pub heads: Vec<i64>,
    pub discriminators: Vec<i64>,
    pub file_names: Vec<Option<Text>>,
    pub chains: Chains,
    /// Per head: (chain or -1, symbol or -1).
    pub head_keys: Vec<(i64, i64)>,
}

/// (function, file, line, column, start line, start file, start address, discriminator) of a
/// calling frame (Python's `Frame`).
pub(crate) type Frame = (Option<Text>, Option<Text>, i64, i64, i64, Option<Text>, Option<u64>, i64);

/// A unit's inline chains: per chain, the innermost name (decl line and file), its entry
/// (DW_AT_low_pc) and its calling frames innermost first, as ids into `frames`. A calling frame is
/// made once per callee node: a large unit's chains share their callers, and a copy per chain
/// held a million frames' strings on a large Rust binary. Every chain's frame ids are in one list
/// (`outer`, a chain's from its first to its last): a list of their own was an allocation a chain.
#[derive(Default)]
pub(crate) struct Chains {
    pub list: Vec<(Name, Option<u64>, (u32, u32))>,
    pub frames: Vec<Frame>,
    pub outer: Vec<u32>,
    by_callee: FxHashMap<usize, u32>,
}

/// An address span, 64-bit as the function ranges every node's spans are cut from (`Tree`).
type Span = (u64, u64);

/// Per node: the spans it owns (cut from its parent's), the first in place: most nodes own one.
#[derive(Default)]
struct NodeSpans(FxHashMap<usize, (Span, Vec<Span>)>);

impl NodeSpans {
    /// Adds `span` to `node`'s; true where it is the node's first.
    fn add(&mut self, node: usize, span: Span) -> bool {
        let entry = self.0.entry(node);
        let first = matches!(entry, Entry::Vacant(_));
        entry.and_modify(|(_, more)| more.push(span)).or_insert((span, Vec::new()));
        first
    }

    /// `node`'s spans, taken.
    fn take(&mut self, node: usize) -> impl Iterator<Item = Span> + use<> {
        self.0.remove(&node).into_iter().flat_map(|(first, more)| std::iter::once(first).chain(more))
    }
}

/// What a build has cut and named so far (a lazy unit keeps it between lookups, `Kept`).
#[derive(Default)]
pub(crate) struct Built {
    node_spans: NodeSpans,
    /// Per node: its chain id, once named.
    chain_ids: FxHashMap<usize, i64>,
    head_ids: FxHashMap<(i64, i64), i64>,
    names: FxHashMap<usize, NodeFacts>,
    /// The runs of the span being built, and every head and chain named so far.
    pub columns: Columns,
}

struct Builder<'u, 'a> {
    tree: &'u Tree<'a>,
    namer: Namer<'u, 'a>,
    lines: Option<&'u LineTable>,
    built: Built,
}

impl Builder<'_, '_> {
    fn facts(&mut self, node: usize) -> Decided<NodeFacts> {
        if let Some(found) = self.built.names.get(&node) {
            return Ok(found.clone());
        }
        let found = self.namer.node_facts(node)?;
        self.built.names.insert(node, found.clone());
        Ok(found)
    }

    /// `_level`: the pieces `node` owns, cut among its children (owner `node` where none holds).
    fn level(&mut self, node: usize) -> Vec<(u64, u64, usize)> {
        let spans = self.built.node_spans.take(node);
        let children = self.tree.children_of(node);
        let mut pieces = Vec::new();
        // Room for a piece per child range and one between each: a level is cut once, and growing
        // these by doubling was a third of the cut's cost on a large Rust unit.
        let ranges: usize = children.iter().map(|&child| self.tree.ranges_of(child as usize).len()).sum();
        pieces.reserve(2 * ranges + 1);
        let mut owners = Vec::with_capacity(ranges);
        for (span_low, span_high) in spans {
            owners.clear();
            for (order, child) in children.iter().map(|&child| child as usize).enumerate() {
                for &(child_low, child_high) in self.tree.ranges_of(child) {
                    if child_low < span_high && child_high > span_low {
                        owners.push((child_low.max(span_low), child_high.min(span_high), order as i64, child));
                    }
                }
            }
            let mut cursor = span_low;
            for (piece_low, piece_high, child) in owned_pieces(&owners) {
                if cursor < piece_low {
                    pieces.push((cursor, piece_low, node));
                }
                self.built.node_spans.add(child, (piece_low, piece_high));
                pieces.push((piece_low, piece_high, child));
                cursor = piece_high;
            }
            if cursor < span_high {
                pieces.push((cursor, span_high, node));
            }
        }
        pieces.sort_unstable();
        pieces
    }

    /// The chain id of inline node `leaf`: its name and its callers' frames (`_outer_frames`).
    fn chain(&mut self, leaf: usize) -> Decided<i64> {
        if let Some(found) = self.built.chain_ids.get(&leaf) {
            return Ok(*found);
        }
        let (name, entry, _) = self.facts(leaf)?;
        let first = self.built.columns.chains.outer.len() as u32;
        let mut callee = leaf;
        while self.tree.nodes[callee].parent >= 0 {
            let frame = self.calling_frame(callee)?;
            self.built.columns.chains.outer.push(frame);
            callee = self.tree.nodes[callee].parent as usize;
        }
        let chains = &mut self.built.columns.chains;
        let id = chains.list.len() as i64;
        chains.list.push((name, entry, (first, chains.outer.len() as u32)));
        self.built.chain_ids.insert(leaf, id);
        Ok(id)
    }

    /// The frame that called inline node `callee`: its caller's name and entry, its call site.
    fn calling_frame(&mut self, callee: usize) -> Decided<u32> {
        if let Some(&found) = self.built.columns.chains.by_callee.get(&callee) {
            return Ok(found);
        }
        let caller = self.tree.nodes[callee].parent as usize;
        let ((function, start_line, start_file), start_address, _) = self.facts(caller)?;
        let (_, _, call_site) = self.facts(callee)?;
        let (file, line, column, discriminator) = call_site.ok_or(Defer("a call site asked of a function"))?;
        let chains = &mut self.built.columns.chains;
        let id = chains.frames.len() as u32;
        chains.frames.push((function, file, line, column, start_line, start_file, start_address, discriminator));
        chains.by_callee.insert(callee, id);
        Ok(id)
    }

    fn head(&mut self, leaf: i64, symbol: i64) -> Decided<i64> {
        if let Some(found) = self.built.head_ids.get(&(leaf, symbol)) {
            return Ok(*found);
        }
        let chain = if leaf >= 0 { self.chain(leaf as usize)? } else { -1 };
        let id = self.built.columns.head_keys.len() as i64;
        self.built.columns.head_keys.push((chain, symbol));
        self.built.head_ids.insert((leaf, symbol), id);
        Ok(id)
    }

    /// One run per row of `sequence` in `[low, high)` (`_append_rows`, rows sorted).
    fn append_rows(&mut self, low: u128, high: u128, sequence: usize, head: i64) -> Decided<()> {
        let lines = self.lines.ok_or(Defer("rows without a line table"))?;
        let (_, _, first, end) = lines.sequences[sequence];
        if high > ADDRESS_MAX {
            return Err(Defer("a run past 64 bits"));
        }
        let addresses = &lines.addresses[first..end];
        let after = addresses.partition_point(|address| u128::from(*address) <= low);
        if after == 0 {
            return Err(Defer("a run before its sequence's first row"));
        }
        let row = first + after - 1;
        let stop = first + addresses.partition_point(|address| u128::from(*address) < high);
        let columns = &mut self.built.columns;
        columns.lows.push(low as u64);
        columns.lows.extend_from_slice(&lines.addresses[row + 1..stop]);
        columns.highs.extend_from_slice(&lines.addresses[row + 1..stop]);
        columns.highs.push(high as u64);
        columns.files.extend(lines.file_indexes[row..stop].iter().map(|&value| i64::from(value)));
        columns.lines.extend(lines.lines[row..stop].iter().map(|&value| i64::from(value)));
        columns.columns.extend(lines.columns[row..stop].iter().map(|&value| i64::from(value)));
        columns.heads.extend(std::iter::repeat_n(head, stop - row));
        columns.discriminators.extend(lines.discriminators[row..stop].iter().map(|&value| i64::from(value)));
        Ok(())
    }

    /// `RunTable.append` of a run without a row.
    fn append_bare(&mut self, low: u128, high: u128, head: i64) {
        if low > ADDRESS_MAX {
            return;
        }
        let columns = &mut self.built.columns;
        columns.lows.push(low as u64);
        columns.highs.push(high.min(ADDRESS_MAX) as u64);
        columns.files.push(-1);
        columns.lines.push(0);
        columns.columns.push(0);
        columns.heads.push(head);
        columns.discriminators.push(0);
    }
}

/// `_row_parts`: `[low, high)` cut where the line sequence answering changes (-1: none).
fn row_parts(pieces: &[(u128, u128, usize)], low: u128, high: u128, out: &mut Vec<(u128, u128, i64)>) {
    out.clear();
    let mut position = pieces.partition_point(|piece| piece.0 <= low).saturating_sub(1);
    let mut cursor = low;
    while position < pieces.len() && pieces[position].0 < high {
        let (piece_low, piece_high, sequence) = pieces[position];
        position += 1;
        if piece_high <= cursor {
            continue;
        }
        if cursor < piece_low {
            out.push((cursor, piece_low, -1));
            cursor = piece_low;
        }
        let end = piece_high.min(high);
        out.push((cursor, end, sequence as i64));
        cursor = end;
    }
    if cursor < high {
        out.push((cursor, high, -1));
    }
}

/// `UnitRuns.all_runs` of a unit whose every part decodes.
pub(crate) fn all_runs<'u, 'a>(
    tree: &'u Tree<'a>,
    namer: Namer<'u, 'a>,
    lines: Option<&'u LineTable>,
    symbols: &SymbolBounds,
    functions_only: bool,
) -> Decided<Columns> {
    let pieces = function_pieces(tree);
    let mut builder = Builder { tree, namer, lines, built: Built::default() };
    // Most nodes get named, chained, headed (libpython: 86, 75, 75 %): room for all, no rehash per doubling.
    let (nodes, built) = (tree.nodes.len(), &mut builder.built);
    built.names.reserve(nodes);
    built.chain_ids.reserve(nodes);
    built.head_ids.reserve(nodes);
    built.columns.chains.by_callee.reserve(nodes);
    built.columns.chains.frames.reserve(nodes);
    built.columns.chains.list.reserve(nodes);
    built.columns.head_keys.reserve(nodes);
    let mut top_nodes = Vec::new();
    for &(low, high, node) in &pieces {
        if builder.built.node_spans.add(node, (low, high)) {
            top_nodes.push(node);
        }
    }
    let mut spans: Vec<(u128, u128, i64)> = Vec::new();
    if !functions_only {
        for after in 0..=pieces.len() {
            let low = if after > 0 { u128::from(pieces[after - 1].1) } else { 0 };
            let high = if after < pieces.len() { u128::from(pieces[after].0) } else { END };
            spans.push((low, high, -1));
        }
    }
    let mut seen = vec![false; tree.nodes.len()];
    for &node in &top_nodes {
        seen[node] = true;
    }
    let mut pending = top_nodes;
    while let Some(node) = pending.pop() {
        for (low, high, owner) in builder.level(node) {
            if owner == node {
                spans.push((u128::from(low), u128::from(high), node as i64));
            } else if !seen[owner] {
                seen[owner] = true;
                pending.push(owner);
            }
        }
    }
    spans.sort_unstable();
    // _chain_error, asked of every leaf before any run is built: a chain that cannot be named is
    // the reference's broken span. (Chains are numbered here; heads by their first run.)
    for &(low, high, leaf) in &spans {
        if leaf >= 0 && low < high {
            builder.chain(leaf as usize)?;
        }
    }
    // One run per row a span covers, one per bare span, a few more where a symbol cuts: room for
    // all of them at once, not a doubling per few thousand runs.
    let room = lines.map_or(0, |lines| lines.addresses.len()) + spans.len();
    let columns = &mut builder.built.columns;
    [&mut columns.lows, &mut columns.highs].into_iter().for_each(|column| column.reserve(room));
    [&mut columns.files, &mut columns.lines, &mut columns.columns, &mut columns.heads, &mut columns.discriminators].into_iter().for_each(|column| column.reserve(room));
    sweep(&mut builder, &spans, symbols)?;
    builder.built.columns.file_names = lines.map(|lines| lines.files.clone()).unwrap_or_default();
    Ok(builder.built.columns)
}

/// `_settle_pieces`: which top-level function owns which addresses, later entries (greater low)
/// winning where function ranges overlap.
fn function_pieces(tree: &Tree<'_>) -> Vec<(u64, u64, usize)> {
    let mut function_ranges = tree.function_ranges.clone();
    function_ranges.sort_unstable();
    let owners: Vec<_> = function_ranges
        .iter()
        .enumerate()
        .map(|(position, &(low, high, node))| (low, high, -(position as i64), node))
        .collect();
    owned_pieces(&owners)
}

/// `_row_pieces`: the line table's answer as disjoint (low, high, sequence) pieces; among
/// overlapping sequences, the one a lookup's backward walk finds first.
fn sequence_pieces(lines: Option<&LineTable>) -> Vec<(u128, u128, usize)> {
    let Some(lines) = lines else { return Vec::new() };
    let owners: Vec<_> = lines
        .sequences
        .iter()
        .enumerate()
        .map(|(position, &(low, high, _, _))| (low, high, -(position as i64), position))
        .collect();
    owned_pieces(&owners)
}

/// `UnitRuns._sweep` over sorted disjoint spans, with cursors over the row and symbol pieces.
fn sweep(builder: &mut Builder<'_, '_>, spans: &[(u128, u128, i64)], symbols: &SymbolBounds) -> Decided<()> {
    let row_pieces = sequence_pieces(builder.lines);
    let (mut row_at, mut symbol_at) = (0usize, 0usize);
    let mut parts = Vec::new();
    for &(low, high, leaf) in spans {
        if low >= high {
            continue; // the gap between two functions that touch
        }
        while row_at < row_pieces.len() && row_pieces[row_at].1 <= low {
            row_at += 1;
        }
        if row_at < row_pieces.len() && row_pieces[row_at].0 <= low && high <= row_pieces[row_at].1 {
            parts.clear();
            parts.push((low, high, row_pieces[row_at].2 as i64));
        } else if row_at >= row_pieces.len() || row_pieces[row_at].0 >= high {
            if leaf < 0 {
                continue;
            }
            parts.clear();
            parts.push((low, high, -1));
        } else {
            row_parts(&row_pieces, low, high, &mut parts);
        }
        append_parts(builder, &parts, leaf, |low, high, out| symbols.pieces_in_order(&mut symbol_at, low, high, out))?;
    }
    Ok(())
}

/// The runs of `parts` (a span's pieces by line sequence, -1: none; `leaf` its innermost inline
/// node, -1: none), cut by `symbol_pieces` where the covering symbol changes.
fn append_parts(
    builder: &mut Builder<'_, '_>, parts: &[(u128, u128, i64)], leaf: i64,
    mut symbol_pieces: impl FnMut(u128, u128, &mut Vec<(u128, u128, i64)>),
) -> Decided<()> {
    let mut cut = Vec::new();
    for &(part_low, part_high, sequence) in parts {
        if sequence < 0 && leaf < 0 {
            continue;
        }
        symbol_pieces(part_low, part_high, &mut cut);
        for &(symbol_low, symbol_high, symbol) in &cut {
            let head = builder.head(leaf, symbol)?;
            if sequence < 0 {
                builder.append_bare(symbol_low, symbol_high, head);
            } else {
                builder.append_rows(symbol_low, symbol_high, sequence as usize, head)?;
            }
        }
    }
    Ok(())
}

/// One run as a lookup reads it: (low, high, file, line, column, discriminator, chain or -1,
/// symbol or -1).
pub(crate) type Run = (u64, u64, i64, i64, i64, i64, i64, i64);

/// What a lazy unit keeps between lookups (`UnitRuns` of a cold lookup: spans built as addresses
/// land in them, each inline level cut once, each chain named once).
pub(crate) struct Kept {
    /// Its columns' head keys and chains: what `UnitColumns.chain` gives.
    pub built: Built,
    /// Per node: its level's pieces (`_level`).
    levels: FxHashMap<usize, Vec<(u64, u64, usize)>>,
    /// The top-level functions' pieces (`_settle_pieces`) and the line sequences' (`_row_pieces`).
    pieces: Vec<(u64, u64, usize)>,
    row_pieces: Vec<(u128, u128, usize)>,
    /// Each span's runs, built on first use.
    spans: FxHashMap<(u128, u128, i64), Vec<Run>>,
}

impl Kept {
    pub(crate) fn new(tree: &Tree<'_>, lines: Option<&LineTable>) -> Self {
        let pieces = function_pieces(tree);
        let mut built = Built::default();
        for &(low, high, node) in &pieces {
            built.node_spans.add(node, (low, high));
        }
        let row_pieces = sequence_pieces(lines);
        Kept { built, levels: FxHashMap::default(), pieces, row_pieces, spans: FxHashMap::default() }
    }
}

/// `UnitRuns.run_at`: the run holding `vaddr`, its span built on first use (`_leaf_at`, `_build`);
/// None where the unit gives no run. A chain that cannot be named, or anything else the reference
/// decides by its own rule, is a `Defer`: the reference answers the unit from then on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lazy_run_at<'a>(
    unit: &UnitData<'a>,
    own: Option<&mut Tree<'a>>,
    tree: &Tree<'a>,
    lines: Option<&LineTable>,
    units: &[(u64, u64)],
    symbols: &SymbolBounds,
    functions_only: bool,
    kept: &mut Kept,
    caches: &mut NamerCaches<'a>,
    vaddr: u128,
) -> Decided<Option<Run>> {
    // A unit whose functions wait (`own`): the one holding `vaddr` walked before its levels are cut.
    let position = kept.pieces.partition_point(|piece| u128::from(piece.0) <= vaddr);
    let tree = match own {
        Some(own) if position > 0 && vaddr < u128::from(kept.pieces[position - 1].1) => {
            own.expand(unit, kept.pieces[position - 1].2)?;
            &*own
        }
        Some(own) => &*own,
        None => tree,
    };
    let namer = Namer { unit, tree, lines, units, caches };
    let mut builder = Builder { tree, namer, lines, built: std::mem::take(&mut kept.built) };
    let found = span_run_at(&mut builder, symbols, functions_only, kept, vaddr);
    kept.built = builder.built;
    found
}

fn span_run_at(
    builder: &mut Builder<'_, '_>,
    symbols: &SymbolBounds,
    functions_only: bool,
    kept: &mut Kept,
    vaddr: u128,
) -> Decided<Option<Run>> {
    // _leaf_at: the top-level piece, then down one level at a time.
    let pieces = &kept.pieces;
    let position = pieces.partition_point(|piece| u128::from(piece.0) <= vaddr);
    let span = if position == 0 || vaddr >= u128::from(pieces[position - 1].1) {
        let low = if position > 0 { u128::from(pieces[position - 1].1) } else { 0 };
        let high = if position < pieces.len() { u128::from(pieces[position].0) } else { END };
        (low, high, -1i64)
    } else {
        let mut node = pieces[position - 1].2;
        loop {
            let level = kept.levels.entry(node).or_insert_with(|| {
                let mut level = builder.level(node);
                level.shrink_to_fit(); // kept with the unit: most of the room `level` reserves goes unused
                level
            });
            let at = level.partition_point(|piece| u128::from(piece.0) <= vaddr).checked_sub(1).ok_or(Defer("an address before its level"))?;
            let (low, high, owner) = level[at];
            if owner == node {
                break (u128::from(low), u128::from(high), node as i64);
            }
            node = owner;
        }
    };
    if !kept.spans.contains_key(&span) {
        let (low, high, leaf) = span;
        if leaf >= 0 {
            builder.chain(leaf as usize)?; // _chain_error
        }
        build_span(builder, symbols, functions_only, &kept.row_pieces, low, high, leaf)?;
        // The span's runs are kept as rows, one list a span; the columns stay with the builder, emptied.
        let columns = &mut builder.built.columns;
        let runs = (0..columns.lows.len()).map(|at| {
            let (chain, symbol) = columns.head_keys[columns.heads[at] as usize];
            (columns.lows[at], columns.highs[at], columns.files[at], columns.lines[at], columns.columns[at], columns.discriminators[at], chain, symbol)
        });
        kept.spans.insert(span, runs.collect());
        [&mut columns.lows, &mut columns.highs].into_iter().for_each(Vec::clear);
        [&mut columns.files, &mut columns.lines, &mut columns.columns, &mut columns.heads, &mut columns.discriminators].into_iter().for_each(Vec::clear);
    }
    let runs = &kept.spans[&span];
    let Some(at) = runs.partition_point(|run| u128::from(run.0) <= vaddr).checked_sub(1) else { return Ok(None) };
    Ok((vaddr < u128::from(runs[at].1)).then_some(runs[at]))
}

/// `UnitRuns._build`: the runs of `[low, high)`, whose innermost inline node is `leaf` (-1: none).
fn build_span(
    builder: &mut Builder<'_, '_>,
    symbols: &SymbolBounds,
    functions_only: bool,
    row_pieces: &[(u128, u128, usize)],
    low: u128,
    high: u128,
    leaf: i64,
) -> Decided<()> {
    if low >= high || (leaf < 0 && functions_only) {
        return Ok(());
    }
    let mut parts = Vec::new();
    row_parts(row_pieces, low, high, &mut parts);
    append_parts(builder, &parts, leaf, |low, high, out| symbols.pieces(low, high, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_of_least_rank_owns_each_address() {
        let pieces = owned_pieces(&[(0, 10, 0, 'a'), (5, 15, -1, 'b'), (15, 20, 0, 'a')]);
        assert_eq!(pieces, vec![(0, 5, 'a'), (5, 15, 'b'), (15, 20, 'a')]);
    }

    #[test]
    fn adjacent_pieces_of_one_owner_are_joined_and_empty_ones_dropped() {
        let pieces = owned_pieces(&[(0, 5, 0, 'a'), (5, 5, -1, 'b'), (5, 9, -2, 'a')]);
        assert_eq!(pieces, vec![(0, 9, 'a')]);
    }

    #[test]
    fn an_owner_that_ended_under_the_top_does_not_come_back() {
        // 'c' (rank -2) holds [2, 4); 'b' (rank -1) ended at 3 under it; 'a' answers from 4.
        let pieces = owned_pieces(&[(0, 10, 0, 'a'), (1, 3, -1, 'b'), (2, 4, -2, 'c')]);
        assert_eq!(pieces, vec![(0, 1, 'a'), (1, 2, 'b'), (2, 4, 'c'), (4, 10, 'a')]);
    }

    #[test]
    fn symbol_pieces_cut_where_the_covering_symbol_changes() {
        let bounds = SymbolBounds { starts: vec![10, 20], stops: vec![15, 30] };
        let mut out = Vec::new();
        bounds.pieces(0, 40, &mut out);
        assert_eq!(out, vec![(0, 10, -1), (10, 15, 0), (15, 20, -1), (20, 30, 1), (30, 40, -1)]);
        bounds.pieces(12, 22, &mut out);
        assert_eq!(out, vec![(12, 15, 0), (15, 20, -1), (20, 22, 1)]);
    }
}
