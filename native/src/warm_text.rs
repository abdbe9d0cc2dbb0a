//! `symbolize lookup`'s output, byte for byte: the twin of `symbolize/answer_text.py`
//! (JSON lines, and llvm-symbolizer's text: function, then `file:line:column`, per frame).

use std::fmt::Write;

/// One frame as printed: names already demangled as asked; None prints as `null` or `??`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShownFrame<'a> {
    pub function: Option<&'a str>,
    pub file: Option<&'a str>,
    pub line: u64,
    pub column: u64,
}

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

/// `null` for None, else the JSON string.
pub fn push_json_optional(out: &mut String, text: Option<&str>) {
    match text {
        None => out.push_str("null"),
        Some(text) => push_json_string(out, text),
    }
}

/// `{"function": ..., "file": ..., "line": L, "column": C}` (`_frame_json`).
pub fn push_frame_json(out: &mut String, frame: &ShownFrame<'_>) {
    out.push_str("{\"function\": ");
    push_json_optional(out, frame.function);
    out.push_str(", \"file\": ");
    push_json_optional(out, frame.file);
    let _ = write!(out, ", \"line\": {}, \"column\": {}}}", frame.line, frame.column);
}

/// `function\nfile:line:column\n`, `??` for a missing or empty name (`_frame_text`).
pub fn push_frame_text(out: &mut String, frame: &ShownFrame<'_>) {
    out.push_str(frame.function.filter(|name| !name.is_empty()).unwrap_or("??"));
    out.push('\n');
    out.push_str(frame.file.filter(|file| !file.is_empty()).unwrap_or("??"));
    let _ = writeln!(out, ":{}:{}", frame.line, frame.column);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        let mut out = String::new();
        push_json_string(&mut out, text);
        out
    }

    #[test]
    fn escapes_as_encode_basestring_ascii() {
        // Expected values from CPython 3.11's json.encoder.encode_basestring_ascii.
        assert_eq!(json("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json("\n\r\t\u{8}\u{c}\u{1}\u{7f}"), r#""\n\r\t\b\f\u0001\u007f""#);
        assert_eq!(json("é→😀"), r#""\u00e9\u2192\ud83d\ude00""#);
        assert_eq!(json("operator<<(int) const"), r#""operator<<(int) const""#);
    }

    #[test]
    fn formats_frames_both_ways() {
        let frame = ShownFrame { function: Some("f"), file: None, line: 3, column: 0 };
        let mut out = String::new();
        push_frame_json(&mut out, &frame);
        assert_eq!(out, r#"{"function": "f", "file": null, "line": 3, "column": 0}"#);
        out.clear();
        push_frame_text(&mut out, &ShownFrame { function: Some(""), ..frame });
        assert_eq!(out, "??\n??:3:0\n");
        out.clear();
        push_json_address(&mut out, 0);
        push_json_end(&mut out, Some(("damaged-debug-info", "x: \"broken\"")));
        assert_eq!(out, "{\"address\": \"0x0\", \"frames\": [], \"reason\": \"damaged-debug-info\", \"detail\": \"x: \\\"broken\\\"\"}\n");
    }
}
