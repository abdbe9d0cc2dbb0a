//! The entries of a serialized pprof Profile (protobuf wire format, profile.proto), counted
//! without decoding it: the twin of `_count_entries` in `symbolize/pprof.py`, which stays the
//! reference (same count, same place where the walk stops). Hand-written: no protobuf crate
//! walks a message without decoding it, and the reference's reading of malformed bytes (a key
//! or length past the end reads as 0, bits past 64) is what the twin must keep.
//!
//! Counted: the Profile's sample types, samples, mappings, locations, functions and strings
//! (fields 1-6), a sample's labels (Sample field 3) and a location's lines (Location field 4).

use pyo3::prelude::*;

const LENGTH_DELIMITED: u64 = 2;
/// Profile's `sample` and `location` fields, and the field of the message each nests that counts.
const SAMPLE: u64 = 2;
const NESTED: [(u64, u64); 2] = [(SAMPLE, 3), (4, 4)];

/// `_varint`: the varint at `position` and the offset past it; 0 and the end when cut short. The
/// low 64 bits are kept (so the wire type, its low 3 bits, is the reference's) and whether that is
/// all of it: one with bits past 64 set is past any field number and any offset.
fn varint(data: &[u8], mut position: usize) -> (u64, bool, usize) {
    let (mut low, mut exact, mut shift) = (0u64, true, 0u32);
    while let Some(&byte) = data.get(position) {
        position += 1;
        let bits = u64::from(byte & 0x7F);
        exact &= bits == 0 || (shift < 64 && (bits << shift) >> shift == bits);
        low |= bits.checked_shl(shift).unwrap_or(0);
        if byte < 0x80 {
            return (low, exact, position);
        }
        shift = shift.saturating_add(7);
    }
    (0, true, data.len())
}

/// `_next_field`: the field whose key is at `position`: its number (None past 64 bits: no field
/// the walk counts), the length of its body when it is length-delimited, and the offset of that
/// body or past its value; None at a wire type a Profile cannot hold (the walk stops).
fn next_field(data: &[u8], position: usize) -> Option<(Option<u64>, Option<usize>, usize)> {
    let (key, exact, position) = varint(data, position);
    let number = exact.then_some(key >> 3);
    Some(match key & 7 {
        LENGTH_DELIMITED => {
            let (size, exact, next) = varint(data, position);
            // A length past 64 bits is past every end.
            (number, Some(usize::try_from(size).ok().filter(|_| exact).unwrap_or(usize::MAX)), next)
        }
        0 => (number, None, varint(data, position).2),
        1 => (number, None, position.saturating_add(8)),
        5 => (number, None, position.saturating_add(4)),
        _ => return None,
    })
}

/// `_nested_messages`: the length-delimited fields numbered `wanted` in `data[position..end]`.
fn nested_messages(data: &[u8], mut position: usize, end: usize, wanted: u64) -> u64 {
    let mut count = 0;
    while position < end {
        let Some((number, body, next)) = next_field(data, position) else { break };
        position = next;
        if let Some(size) = body {
            count += u64::from(number == Some(wanted));
            position = position.saturating_add(size);
        }
    }
    count
}

/// Twin of `_count_entries(data, limit)`: the entries of `data`, or the count as it first passes
/// `limit`.
#[pyfunction]
pub fn count_profile_entries(data: &[u8], limit: u64) -> u64 {
    let (mut count, mut position, end) = (0u64, 0usize, data.len());
    while position < end {
        let Some((number, body, next)) = next_field(data, position) else { break };
        position = next;
        let Some(size) = body else { continue };
        if let Some(number @ 1..=6) = number {
            count += 1;
            if let Some(&(_, nested)) = NESTED.iter().find(|(field, _)| *field == number) {
                // As the reference decides it: a body of 2 bytes or less inside the data holds a
                // nested message only when it is that message, empty.
                let body_end = position.saturating_add(size);
                if size > 2 || body_end > end {
                    count += nested_messages(data, position, body_end.min(end), nested);
                } else if size == 2 && data[position..body_end] == [(nested << 3 | LENGTH_DELIMITED) as u8, 0] {
                    count += 1;
                }
            }
            if count > limit {
                return count;
            }
        }
        position = position.saturating_add(size);
    }
    count
}
