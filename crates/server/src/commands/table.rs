//! [`CommandTable`]: the names a server answers to, built once from [`super::COMMANDS`] and
//! the `rename-command` options (Redis's `rename-command NAME NEWNAME`): a renamed command
//! answers only to its new name, and a command renamed to the empty name is disabled
//! (`ERR unknown command`), so that `FLUSHALL`, `FLUSHDB`, `SHUTDOWN` or `CONFIG` can be
//! taken away from clients of a server without a password.

use super::{CommandSpec, COMMANDS};
use crate::security::is_http_request_name;
use std::collections::HashMap;

/// Why a `rename-command` option is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenameError {
    /// NAME is no command of this server (or was renamed by an earlier option).
    #[error("rename-command {0}: no such command")]
    NoSuchCommand(String),
    /// NEWNAME is already the name of a command.
    #[error("rename-command {name} {new_name}: a command named {new_name} already exists")]
    NameTaken {
        /// The command renamed.
        name: String,
        /// The name asked for.
        new_name: String,
    },
    /// NEWNAME holds a blank or a control character (an inline request could not name it),
    /// or is `POST` / `Host:`, which close the connection as HTTP requests.
    #[error("rename-command {name}: {new_name:?} cannot be a command name")]
    BadName {
        /// The command renamed.
        name: String,
        /// The name asked for.
        new_name: String,
    },
}

/// The server's command names (lower case) and what each runs.
#[derive(Debug, Clone)]
pub struct CommandTable {
    by_name: HashMap<String, &'static CommandSpec>,
    /// Every enabled command under its name, in [`COMMANDS`]' order (for `COMMAND`).
    listed: Vec<(String, &'static CommandSpec)>,
}

impl Default for CommandTable {
    fn default() -> Self {
        Self::with_renames(&[]).unwrap_or_else(|_| unreachable!("no renames cannot fail"))
    }
}

impl CommandTable {
    /// The table with `renames` (NAME, NEWNAME) applied in order; an empty NEWNAME disables
    /// NAME. Names are case-insensitive.
    pub fn with_renames(renames: &[(String, String)]) -> Result<Self, RenameError> {
        let mut by_name: HashMap<String, &'static CommandSpec> =
            COMMANDS.iter().map(|c| (c.name.to_string(), c)).collect();
        for (name, new_name) in renames {
            let old = name.to_ascii_lowercase();
            let new = new_name.to_ascii_lowercase();
            let bad = new
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
                || is_http_request_name(new.as_bytes());
            if bad {
                return Err(RenameError::BadName {
                    name: name.clone(),
                    new_name: new_name.clone(),
                });
            }
            if !new.is_empty() && by_name.contains_key(&new) {
                return Err(RenameError::NameTaken {
                    name: name.clone(),
                    new_name: new_name.clone(),
                });
            }
            let spec = by_name
                .remove(&old)
                .ok_or_else(|| RenameError::NoSuchCommand(name.clone()))?;
            if !new.is_empty() {
                by_name.insert(new, spec);
            }
        }
        let mut listed: Vec<(String, &'static CommandSpec)> =
            by_name.iter().map(|(n, c)| (n.clone(), *c)).collect();
        let order = |c: &CommandSpec| COMMANDS.iter().position(|x| std::ptr::eq(x, c));
        listed.sort_by_key(|(_, c)| order(c));
        Ok(CommandTable { by_name, listed })
    }

    /// The command named `name` (any case).
    pub fn lookup(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        let mut buf = [0u8; 32];
        if let Some(lower) = buf.get_mut(..name.len()) {
            for (d, s) in lower.iter_mut().zip(name) {
                *d = s.to_ascii_lowercase();
            }
            return std::str::from_utf8(lower)
                .ok()
                .and_then(|n| self.by_name.get(n).copied());
        }
        let lower = String::from_utf8(name.to_ascii_lowercase()).ok()?;
        self.by_name.get(&lower).copied()
    }

    /// Every enabled command with the name it answers to.
    pub fn commands(&self) -> &[(String, &'static CommandSpec)] {
        &self.listed
    }

    /// The name command `spec` answers to (`None`: disabled).
    pub fn name_of(&self, spec: &CommandSpec) -> Option<&str> {
        self.listed
            .iter()
            .find(|(_, c)| std::ptr::eq(*c, spec))
            .map(|(n, _)| n.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn r(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn renamed_commands_answer_to_their_new_name_only() {
        let t =
            CommandTable::with_renames(&[r("FLUSHALL", ""), r("shutdown", "Stop-Now-42")]).unwrap();
        assert!(t.lookup(b"flushall").is_none());
        assert!(t.lookup(b"SHUTDOWN").is_none());
        assert_eq!(t.lookup(b"stop-now-42").map(|c| c.name), Some("shutdown"));
        assert_eq!(t.lookup(b"STOP-NOW-42").map(|c| c.name), Some("shutdown"));
        assert_eq!(t.lookup(b"GET").map(|c| c.name), Some("get"));
        assert_eq!(t.commands().len(), COMMANDS.len() - 1);
        let long = "a".repeat(40);
        let t2 = CommandTable::with_renames(&[r("get", &long)]).unwrap();
        assert_eq!(
            t2.lookup(long.to_uppercase().as_bytes()).map(|c| c.name),
            Some("get")
        );
        let Some(get) = t2.lookup(long.as_bytes()) else {
            panic!("renamed get")
        };
        assert_eq!(t2.name_of(get), Some(long.as_str()));
    }

    #[test]
    fn bad_renames_are_refused() {
        assert_eq!(
            CommandTable::with_renames(&[r("nosuch", "x")]).err(),
            Some(RenameError::NoSuchCommand("nosuch".into()))
        );
        assert!(matches!(
            CommandTable::with_renames(&[r("flushall", "get")]),
            Err(RenameError::NameTaken { .. })
        ));
        // Renamed once, the old name is gone.
        assert!(matches!(
            CommandTable::with_renames(&[r("flushall", "fa"), r("flushall", "fb")]),
            Err(RenameError::NoSuchCommand(_))
        ));
        for bad in ["a b", "post", "HOST:", "x\ny"] {
            assert!(
                matches!(
                    CommandTable::with_renames(&[r("flushdb", bad)]),
                    Err(RenameError::BadName { .. })
                ),
                "{bad:?}"
            );
        }
        // Two commands may swap names through a third.
        let t = CommandTable::with_renames(&[r("get", "tmp"), r("set", "get"), r("tmp", "set")])
            .unwrap();
        assert_eq!(t.lookup(b"get").map(|c| c.name), Some("set"));
        assert_eq!(t.lookup(b"set").map(|c| c.name), Some("get"));
    }
}
