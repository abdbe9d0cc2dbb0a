//! `symbolize lookup`'s output, byte for byte: the twin of `symbolize/answer_text.py`
//! (JSON lines, and llvm-symbolizer's text: function, then `file:line:column`, per frame).

use std::fmt::Write;

/// `text` as Python's `json.encoder.encode_basestring_ascii` writes it, quotes included:
/// `"` and `\` escaped, the five short escapes, every other character outside `' '..='~'` as
/// `\uXXXX` in lower-case hex (a surrogate pair above U+FFFF).
pub fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(character),
            _ => {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// What follows a frame's file: `, "line": L, "column": C}` in JSON, `:L:C` and a newline in text.
/// The digits are written here: `write!`'s formatting machinery was 3 % of a warm lookup.
pub fn push_place(out: &mut String, line: u64, column: u64, as_json: bool) {
    let (pieces, end) = if as_json { ([", \"line\": ", ", \"column\": "], "}") } else { ([":", ":"], "\n") };
    for (piece, value) in pieces.into_iter().zip([line, column]) {
        let (mut digits, mut at, mut rest) = ([b'0'; 20], 20, value);
        while at == 20 || rest > 0 {
            at -= 1;
            digits[at] += (rest % 10) as u8;
            rest /= 10;
        }
        out.push_str(piece);
        out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
    }
    out.push_str(end);
}

/// The start of an address's JSON line, up to the frames: `{"address": "0x1f", "frames": [`.
pub fn push_json_address(out: &mut String, vaddr: u64) {
    let _ = write!(out, "{{\"address\": \"{vaddr:#x}\", \"frames\": [");
}

/// The end of a JSON line: `]`, the reason and detail of an unnamed address, `}` and newline.
pub fn push_json_end(out: &mut String, reason: Option<(&str, &str)>) {
    out.push(']');
    if let Some((reason, detail)) = reason {
        out.push_str(", \"reason\": \"");
        out.push_str(reason);
        out.push('"');
        if !detail.is_empty() {
            out.push_str(", \"detail\": ");
            push_json_string(out, detail);
        }
    }
    out.push_str("}\n");
}

/// A line that is no address, echoed: as a JSON string in a line of its own, or as it is.
pub fn push_echo(out: &mut String, text: &str, as_json: bool) {
    if as_json {
        out.push_str("{\"address\": ");
        push_json_string(out, text);
        out.push_str(", \"frames\": [], \"reason\": \"not-an-address\"}\n");
    } else {
        out.push_str(text);
        out.push('\n');
    }
}

/// What llvm-symbolizer prints for an address nothing names.
pub const UNNAMED_TEXT: &str = "??\n??:0:0\n\n";
