//! The lines of a trace's bytes, found with `memchr`'s vector search: the launcher splits
//! every byte of every node's trace while the run goes on (7 MB in a Ricart-Agrawala run of 20 x
//! 20), and a byte-at-a-time split was most of its own reading.

/// The pieces of `bytes` between newlines, as `bytes.split(|&b| b == b'\n')` gives them (the
/// piece after the last newline included, empty or not).
pub(crate) fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(bytes);
    std::iter::from_fn(move || {
        let r = rest?;
        match memchr::memchr(b'\n', r) {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Where the last newline of `bytes` is.
pub(crate) fn last_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memrchr(b'\n', bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_as_the_standard_split_splits_them() {
        let cases: [&[u8]; 8] = [
            b"",
            b"\n",
            b"a",
            b"a\n",
            b"\na",
            b"a\nb\n\nc",
            b"\n\n\n",
            b"{\"t\":1}\n{\"t\":2}",
        ];
        for c in cases {
            let ours: Vec<&[u8]> = split_lines(c).collect();
            let std: Vec<&[u8]> = c.split(|&b| b == b'\n').collect();
            assert_eq!(ours, std, "{:?}", String::from_utf8_lossy(c));
            assert_eq!(last_newline(c), c.iter().rposition(|&b| b == b'\n'));
        }
        // Long enough for the vector search's own paths.
        let long: Vec<u8> = (0..10_000u32).map(|i| if i % 97 == 0 { b'\n' } else { b'x' }).collect();
        assert!(split_lines(&long).eq(long.split(|&b| b == b'\n')));
        assert_eq!(last_newline(&long), long.iter().rposition(|&b| b == b'\n'));
    }
}
