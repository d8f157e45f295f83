//! Text read from files made safe for a terminal: control characters escaped, so that a
//! name or a label cannot move the cursor, change colours or hide what precedes it.

use std::borrow::Cow;

/// `s` with its control characters escaped (`\x1b`, `\r`, `\t`...; newlines kept), so that
/// text read from files (names, labels) printed to a terminal cannot move the cursor, change
/// colours or hide what precedes it.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// As [`escape_control`], newlines escaped too: for one cell or one line.
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| c.is_control() && !(keep_newlines && c == '\n'))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let v = c as u32;
                if v < 0x100 {
                    out.push_str(&format!("\\x{v:02x}"));
                } else {
                    out.push_str(&format!("\\u{{{v:x}}}"));
                }
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_control("a\x1b[31mb\n"), "a\\x1b[31mb\n");
        assert_eq!(escape_control("plain"), "plain");
        assert_eq!(escape_line("a\nb\x07"), "a\\nb\\x07");
    }
}
