//! The entries of a serialized pprof Profile (protobuf wire format, profile.proto), counted
//! without decoding it: the twin of `_count_entries` in `symbolize/pprof.py`, which stays the
//! reference (same count, same place where the walk stops).
//!
//! Counted: the Profile's sample types, samples, mappings, locations, functions and strings
//! (fields 1-6), a sample's labels (Sample field 3) and a location's lines (Location field 4).

use pyo3::prelude::*;

const LENGTH_DELIMITED: u64 = 2;
const SAMPLE: u64 = 2;
const LOCATION: u64 = 4;
const SAMPLE_LABEL: u64 = 3;
const LOCATION_LINE: u64 = 4;

/// A varint as the reference reads it: `exact` is false when bits past 64 were set (the Python
/// value is then past any field number and any offset); the low 64 bits are kept either way, so
/// the wire type (its low 3 bits) is the reference's.
struct Varint {
    low: u64,
    exact: bool,
}

/// `_varint`: the varint at `position` and the offset past it; 0 and the end when cut short.
fn varint(data: &[u8], mut position: usize) -> (Varint, usize) {
    let mut low: u64 = 0;
    let mut exact = true;
    let mut shift: u32 = 0;
    while let Some(&byte) = data.get(position) {
        position += 1;
        let bits = u64::from(byte & 0x7F);
        if bits != 0 {
            if shift >= 64 || (bits << shift) >> shift != bits {
                exact = false;
            }
            if shift < 64 {
                low |= bits << shift;
            }
        }
        if byte < 0x80 {
            return (Varint { low, exact }, position);
        }
        shift = shift.saturating_add(7);
    }
    (Varint { low: 0, exact: true }, data.len())
}

/// The one-byte key of a length-delimited field numbered below 16.
fn nested_key(number: u64) -> u8 {
    (number << 3 | LENGTH_DELIMITED) as u8
}

/// An offset or length as an offset: one past 64 bits is past every end.
fn length(value: &Varint) -> usize {
    if value.exact {
        usize::try_from(value.low).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    }
}

/// One field, as `_next_field` reads it.
struct Field {
    /// Its number; None past 64 bits (no field the walk counts).
    number: Option<u64>,
    /// The length of its body when it is length-delimited.
    body: Option<usize>,
    /// The offset of that body, or past its value.
    next: usize,
}

/// `_next_field`: the field whose key is at `position`; None at a wire type a Profile cannot
/// hold (the walk stops).
fn next_field(data: &[u8], position: usize) -> Option<Field> {
    let (key, position) = varint(data, position);
    let number = key.exact.then_some(key.low >> 3);
    let (body, next) = match key.low & 7 {
        LENGTH_DELIMITED => {
            let (size, next) = varint(data, position);
            (Some(length(&size)), next)
        }
        0 => (None, varint(data, position).1),
        1 => (None, position.saturating_add(8)),
        5 => (None, position.saturating_add(4)),
        _ => return None,
    };
    Some(Field { number, body, next })
}

/// `_nested_messages`: the length-delimited fields numbered `wanted` in `data[position..end]`.
fn nested_messages(data: &[u8], mut position: usize, end: usize, wanted: u64) -> u64 {
    let mut count = 0;
    while position < end {
        let Some(field) = next_field(data, position) else {
            break;
        };
        position = field.next;
        if let Some(size) = field.body {
            if field.number == Some(wanted) {
                count += 1;
            }
            position = position.saturating_add(size);
        }
    }
    count
}

/// Twin of `_count_entries(data, limit)`: the entries of `data`, or the count as it first passes
/// `limit`.
#[pyfunction]
pub fn count_profile_entries(data: &[u8], limit: u64) -> u64 {
    let mut count: u64 = 0;
    let mut position = 0;
    let end = data.len();
    while position < end {
        let Some(field) = next_field(data, position) else {
            break;
        };
        position = field.next;
        let Some(size) = field.body else {
            continue;
        };
        if let Some(number @ 1..=6) = field.number {
            count += 1;
            if number == SAMPLE || number == LOCATION {
                let nested = if number == SAMPLE { SAMPLE_LABEL } else { LOCATION_LINE };
                // As the reference decides it: a body of 2 bytes or less inside the data holds a
                // nested message only when it is that message, empty.
                let body_end = position.saturating_add(size);
                if size > 2 || body_end > end {
                    count += nested_messages(data, position, body_end.min(end), nested);
                } else if size == 2 && data[position] == nested_key(nested) && data[position + 1] == 0 {
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
