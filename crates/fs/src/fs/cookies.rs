//! Directory offsets that stay valid while the directory changes. `readdir` hands the
//! kernel an offset after each entry and continues from it on the next call; an offset that
//! were a position in the current listing would skip names once earlier names are unlinked
//! (a program reading a directory and unlinking as it goes would leave files behind). Each
//! name gets a cookie when it enters the directory, cookies only grow, and a listing resumes
//! at the first cookie after the offset: names removed meanwhile are simply gone, names added
//! meanwhile come at the end. Cookies live in memory only (built on a directory's first
//! listing since the mount, in name order); offsets are not kept across remounts.

use std::collections::{BTreeMap, HashMap};

/// The first cookie of a name; 1 and 2 are the offsets after `.` and `..`.
pub(crate) const FIRST: u64 = 3;

/// Cookies of one directory.
#[derive(Debug, Default)]
pub(crate) struct DirCookies {
    next: u64,
    by_cookie: BTreeMap<u64, Vec<u8>>,
    by_name: HashMap<Vec<u8>, u64>,
}

impl DirCookies {
    /// Cookies for `names` in the order given.
    pub(crate) fn new<'a>(names: impl Iterator<Item = &'a Vec<u8>>) -> Self {
        let mut c = DirCookies {
            next: FIRST,
            ..DirCookies::default()
        };
        for n in names {
            c.insert(n);
        }
        c
    }

    /// Gives `name` a new cookie (no change if it has one: a name replaced by rename keeps
    /// its place).
    pub(crate) fn insert(&mut self, name: &[u8]) {
        if self.by_name.contains_key(name) {
            return;
        }
        let c = self.next;
        self.next += 1;
        self.by_cookie.insert(c, name.to_vec());
        self.by_name.insert(name.to_vec(), c);
    }

    /// Forgets `name`.
    pub(crate) fn remove(&mut self, name: &[u8]) {
        if let Some(c) = self.by_name.remove(name) {
            self.by_cookie.remove(&c);
        }
    }

    /// Names whose cookie is greater than `offset`, with their cookies, in cookie order.
    pub(crate) fn after(&self, offset: u64) -> impl Iterator<Item = (u64, &[u8])> {
        self.by_cookie
            .range(offset.saturating_add(1).max(FIRST)..)
            .map(|(&c, n)| (c, n.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_removal_of_names_already_listed() {
        let names: Vec<Vec<u8>> = (0..10).map(|i| format!("n{i}").into_bytes()).collect();
        let mut c = DirCookies::new(names.iter());
        let first: Vec<(u64, Vec<u8>)> = c.after(0).take(4).map(|(k, n)| (k, n.to_vec())).collect();
        for (_, n) in &first {
            c.remove(n);
        }
        let resume = first.last().map(|(k, _)| *k).unwrap_or(0);
        let rest: Vec<Vec<u8>> = c.after(resume).map(|(_, n)| n.to_vec()).collect();
        assert_eq!(rest, names[4..].to_vec());
        c.insert(b"late");
        assert_eq!(
            c.after(resume).last().map(|(_, n)| n.to_vec()),
            Some(b"late".to_vec())
        );
    }
}
