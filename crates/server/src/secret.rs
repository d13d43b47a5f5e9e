//! [`Password`]: the password clients authenticate with (`--requirepass`). It never appears
//! in `Debug` output, error messages or log lines: it has no `Display`, its `Debug` prints
//! `Password(<redacted>)`, and [`Password::matches`] compares in time independent of where
//! the bytes differ (as Redis's `time_independent_strcmp`).

use std::str::FromStr;

/// A password, hidden from `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// The password `s`.
    pub fn new(s: impl Into<String>) -> Self {
        Password(s.into())
    }

    /// Whether `given` is the password, in time that depends on the lengths only.
    pub fn matches(&self, given: &[u8]) -> bool {
        let want = self.0.as_bytes();
        // Compare every byte of the longer of the two, whatever differs where.
        let n = want.len().max(given.len());
        let mut diff = u8::from(want.len() != given.len());
        for i in 0..n {
            let a = want.get(i).copied().unwrap_or(0);
            let b = given.get(i).copied().unwrap_or(0);
            diff |= a ^ b;
        }
        std::hint::black_box(diff) == 0
    }

    /// The password itself, for the one place that must show it: `CONFIG GET requirepass`
    /// to an authenticated client (as Redis answers it).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the password is empty (an empty password is no password: refuse it).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

impl From<&str> for Password {
    fn from(s: &str) -> Self {
        Password::new(s)
    }
}

impl From<String> for Password {
    fn from(s: String) -> Self {
        Password::new(s)
    }
}

impl FromStr for Password {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Password::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_only_the_password_and_never_shows_it() {
        let p = Password::from("s3cret");
        assert!(p.matches(b"s3cret"));
        for wrong in [&b""[..], b"s3cre", b"s3cret!", b"S3cret", b"x"] {
            assert!(!p.matches(wrong), "{wrong:?}");
        }
        let shown = format!("{p:?} {:?}", Some(p.clone()));
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(p.expose(), "s3cret");
    }
}
