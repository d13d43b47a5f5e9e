//! Redis's glob patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`): `*`, `?`, `[abc]`, `[^a-z]`
//! and `\` escapes, matched without recursion (backtracking to the last `*` only, which is
//! enough for globs), so a hostile pattern costs at most pattern × subject steps.

/// Whether `s` matches glob `p`; `nocase` compares ASCII letters case-insensitively.
pub fn matches(p: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() {
            match p[pi] {
                b'*' => {
                    while pi < p.len() && p[pi] == b'*' {
                        pi += 1;
                    }
                    if pi == p.len() {
                        return true;
                    }
                    star = Some((pi, si));
                    continue;
                }
                b'?' => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                b'[' => {
                    if let Some((hit, next)) = class(p, pi, s[si], nocase) {
                        if hit {
                            pi = next;
                            si += 1;
                            continue;
                        }
                    }
                }
                b'\\' if pi + 1 < p.len() => {
                    if eq(p[pi + 1], s[si]) {
                        pi += 2;
                        si += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, s[si]) {
                        pi += 1;
                        si += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Matches `c` against the class starting at `p[at] == '['`: whether it matched and the index
/// after the class; `None` for an unterminated class (Redis then treats the rest as the class).
fn class(p: &[u8], at: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut i = at + 1;
    let not = p.get(i) == Some(&b'^');
    if not {
        i += 1;
    }
    let norm = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = norm(c);
    let mut hit = false;
    loop {
        let b = *p.get(i)?;
        if b == b']' {
            break;
        }
        if b == b'\\' && i + 1 < p.len() {
            hit |= norm(p[i + 1]) == c;
            i += 2;
        } else if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
            let (mut lo, mut hi) = (norm(b), norm(p[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            hit |= lo <= c && c <= hi;
            i += 3;
        } else {
            hit |= norm(b) == c;
            i += 1;
        }
    }
    Some((hit != not, i + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_as_redis_does() {
        let yes: [(&str, &str); 9] = [
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("key:*:x", "key:1:2:x"),
            ("a\\*b", "a*b"),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes(), false), "{p} {s}");
        }
        let no: [(&str, &str); 5] = [
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("key:*:x", "key:1:2:y"),
            ("a\\*b", "aab"),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes(), false), "{p} {s}");
        }
        assert!(matches(b"SAVE", b"save", true));
        // Many stars against a long subject that fails at the end: linear backtracking only.
        let hostile = format!("{}b", "*a".repeat(100));
        assert!(!matches(
            hostile.as_bytes(),
            "a".repeat(10_000).as_bytes(),
            false
        ));
    }
}
