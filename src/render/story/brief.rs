//! A message's brief as a person reads it: Rust's debug text taken out.

/// A message's brief as a person reads it: Rust's debug text taken out. `Some(4)` is `4`,
/// `None` is `none`, and a struct `Grant { req: 7, token: 9 }` is its fields `(req=7, token=9)`
/// (`GRANT(Grant { req: 7 })` is `GRANT(req=7)`).
pub(crate) fn clean_brief(brief: &str) -> String {
    let chars: Vec<char> = brief.chars().collect();
    let mut out = String::with_capacity(brief.len());
    let mut i = 0;
    clean_seq(&chars, &mut i, &mut out, None);
    // NAME((fields)) -> NAME(fields): the struct was the variant's only field.
    if let Some(open) = out.find("((") {
        if out.ends_with("))") && balanced(&out[open + 1..out.len() - 1]) {
            out = format!("{}{}", &out[..open + 1], &out[open + 2..out.len() - 1]);
        }
    }
    out
}

/// Whether `s` is one bracketed group `(...)` whose brackets match.
pub(super) fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for (k, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && k + 1 != s.len() {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0 && s.starts_with('(')
}

/// Copies `chars` from `i` to `out`, cleaned, until `close` (consumed) or the end.
pub(super) fn clean_seq(chars: &[char], i: &mut usize, out: &mut String, close: Option<char>) {
    while *i < chars.len() {
        let c = chars[*i];
        if Some(c) == close {
            *i += 1;
            return;
        }
        if c.is_alphabetic() || c == '_' {
            let start = *i;
            while *i < chars.len() && (chars[*i].is_alphanumeric() || chars[*i] == '_') {
                *i += 1;
            }
            let word: String = chars[start..*i].iter().collect();
            let next = chars.get(*i).copied();
            let after_space = chars.get(*i + 1).copied();
            if word == "Some" && next == Some('(') {
                *i += 1;
                clean_seq(chars, i, out, Some(')'));
            } else if word == "None" && !next.is_some_and(|n| n.is_alphanumeric()) {
                out.push_str("none");
            } else if word.starts_with(char::is_uppercase)
                && next == Some(' ')
                && after_space == Some('{')
                && word.chars().any(char::is_lowercase)
            {
                *i += 2;
                let mut inner = String::new();
                clean_seq(chars, i, &mut inner, Some('}'));
                out.push('(');
                out.push_str(inner.trim());
                out.push(')');
            } else if next == Some(':') && after_space == Some(' ') && close == Some('}') {
                *i += 2;
                out.push_str(&word);
                out.push('=');
            } else {
                out.push_str(&word);
            }
            continue;
        }
        match c {
            '(' => {
                *i += 1;
                out.push('(');
                clean_seq(chars, i, out, Some(')'));
                out.push(')');
            }
            '{' => {
                *i += 1;
                out.push('{');
                clean_seq(chars, i, out, Some('}'));
                out.push('}');
            }
            '[' => {
                *i += 1;
                out.push('[');
                clean_seq(chars, i, out, Some(']'));
                out.push(']');
            }
            c => {
                out.push(c);
                *i += 1;
            }
        }
    }
}
