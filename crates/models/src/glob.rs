//! A small glob matcher for mnemonic patterns: `*` any run, `?` one character, `[abc]` one of.

/// True when `text` matches the glob `pattern` entirely.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches(&p, &t)
}

fn matches(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|k| matches(&p[1..], &t[k..])),
        Some('?') => !t.is_empty() && matches(&p[1..], &t[1..]),
        Some('[') => {
            let Some(end) = p.iter().position(|&c| c == ']') else {
                return !t.is_empty() && t[0] == '[' && matches(&p[1..], &t[1..]);
            };
            !t.is_empty() && p[1..end].contains(&t[0]) && matches(&p[end + 1..], &t[1..])
        }
        Some(&c) => !t.is_empty() && t[0] == c && matches(&p[1..], &t[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("vf*madd*[ps][sd]", "vfmadd231pd"));
        assert!(glob_match("vf*madd*[ps][sd]", "vfnmadd213sd"));
        assert!(!glob_match("div[ps][sd]", "vdivpd"));
        assert!(glob_match("j*", "jne"));
        assert!(glob_match("s[ah][lr]", "shl"));
        assert!(!glob_match("add", "addpd"));
        assert!(glob_match("?dd", "add"));
    }
}
