//! Binary-safe printing of keys and values: escaped (the default, one entry per line whatever
//! the bytes), raw, or hex.

use clap::ValueEnum;
use std::fmt::Write as _;

/// How `db get` and `db scan` print bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Printable ASCII as is; `\\`, `\t`, `\n`, `\r` and `\xNN` for the rest.
    #[default]
    Escaped,
    /// The bytes as stored.
    Raw,
    /// Lower-case hexadecimal.
    Hex,
}

/// Renders `b` in `format` (for `Raw` the bytes are returned unchanged).
pub fn render(b: &[u8], format: Format) -> Vec<u8> {
    match format {
        Format::Raw => b.to_vec(),
        Format::Hex => hex(b).into_bytes(),
        Format::Escaped => escape(b).into_bytes(),
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// `b` with every byte that is not printable ASCII escaped, so that a line holds one entry.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &x in b {
        match x {
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(x as char),
            _ => {
                let _ = write!(s, "\\x{x:02x}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_one_entry_per_line_and_is_unambiguous() {
        assert_eq!(escape(b"a\tb\nc\\d\x00\xff"), "a\\tb\\nc\\\\d\\x00\\xff");
        assert_eq!(hex(b"\x00\xab"), "00ab");
        assert_eq!(render(b"\x01", Format::Raw), vec![1]);
    }
}
