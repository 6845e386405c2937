//! The one reader of configuration variables, and the tables that name them.
//!
//! Each crate lists its variables once, as [`Variable`]s: the name, the
//! default and what is allowed. [`Env`] reads a variable through its entry
//! (trimmed, empty means unset, unset means the default), and a bad value is
//! a [`ConfigError`] naming the variable, the value and the entry's
//! [`Allowed`] text. The README tables are checked against the same lists
//! ([`crate::test_support::assert_readme_documents`]).
//!
//! An enum that a variable names by a word implements [`Word`]: its words
//! are written once, in [`Word::WORDS`], and serve reading, errors and
//! [`Word::word`].

use std::collections::HashMap;

use crate::setup::error::ConfigError;

/// A configuration variable: its name, its default and what is allowed.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// The environment variable's name.
    pub name: &'static str,
    /// Its default, as a value of the variable would be written ("" = none).
    pub default: &'static str,
    /// What is allowed: checked by [`Env`], said by its errors.
    pub allowed: Allowed,
}

/// What a variable allows.
#[derive(Debug, Clone, Copy)]
pub enum Allowed {
    /// An integer in `min..=max`, in `unit` (" ms", " bytes", or "").
    Number {
        /// The least value.
        min: u64,
        /// The greatest value.
        max: u64,
        /// The unit, with its leading space.
        unit: &'static str,
    },
    /// One of the words of a [`Word`] type.
    Words(fn() -> Vec<&'static str>),
    /// Anything the reading code checks; the text says what.
    Text(&'static str),
}

impl Allowed {
    /// What an error says is allowed.
    pub fn describe(&self) -> String {
        match self {
            Allowed::Number { min, max, unit } => format!("an integer from {min} to {max}{unit}"),
            Allowed::Words(words) => format!("one of: {}", words().join(", ")),
            Allowed::Text(text) => (*text).to_owned(),
        }
    }
}

impl Variable {
    /// An integer variable.
    pub const fn number(
        name: &'static str,
        default: &'static str,
        min: u64,
        max: u64,
        unit: &'static str,
    ) -> Self {
        Variable {
            name,
            default,
            allowed: Allowed::Number { min, max, unit },
        }
    }

    /// A variable that names one of `T`'s words.
    pub const fn words<T: Word>(name: &'static str, default: &'static str) -> Self {
        Variable {
            name,
            default,
            allowed: Allowed::Words(words_of::<T>),
        }
    }

    /// `true` or `false`.
    pub const fn flag(name: &'static str, default: &'static str) -> Self {
        Variable::words::<bool>(name, default)
    }

    /// A variable the reading code checks itself; `allowed` says what.
    pub const fn text(name: &'static str, default: &'static str, allowed: &'static str) -> Self {
        Variable {
            name,
            default,
            allowed: Allowed::Text(allowed),
        }
    }

    /// The error for `value`: what [`Allowed`] says.
    pub fn error(&self, value: &str) -> ConfigError {
        ConfigError::new(self.name, value, self.allowed.describe())
    }
}

/// An enum a configuration variable names by a word (`fail`, `drop`, ...).
pub trait Word: Copy + PartialEq + 'static {
    /// Every value and its word, in the order errors and READMEs list them.
    const WORDS: &'static [(&'static str, Self)];

    /// The word for this value.
    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("", |(w, _)| w)
    }

    /// The value a word names.
    fn from_word(word: &str) -> Option<Self> {
        Self::WORDS
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, v)| *v)
    }
}

/// `T`'s words, in order.
pub fn words_of<T: Word>() -> Vec<&'static str> {
    T::WORDS.iter().map(|(w, _)| *w).collect()
}

impl Word for bool {
    const WORDS: &'static [(&'static str, Self)] = &[("true", true), ("false", false)];
}

type Lookup<'a> = Box<dyn Fn(&str) -> Option<String> + 'a>;

/// A source of environment variables.
pub struct Env<'a> {
    lookup: Lookup<'a>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

impl Env<'static> {
    /// The process environment.
    pub fn process() -> Self {
        Env {
            lookup: Box::new(|k| std::env::var(k).ok()),
        }
    }

    /// A fixed set of variables (tests).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env {
            lookup: Box::new(move |k| map.get(k).cloned()),
        }
    }
}

impl<'a> Env<'a> {
    /// Any lookup function.
    pub fn from_fn(f: impl Fn(&str) -> Option<String> + 'a) -> Self {
        Env {
            lookup: Box::new(f),
        }
    }

    /// Look a variable up as it is.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    /// The trimmed value, `None` when unset or blank.
    pub fn raw(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Whether the variable is set (not blank).
    pub fn is_set(&self, v: &Variable) -> bool {
        self.raw(v.name).is_some()
    }

    /// The value, else the default; `None` when neither is there.
    pub fn value(&self, v: &Variable) -> Option<String> {
        self.raw(v.name)
            .or_else(|| (!v.default.is_empty()).then(|| v.default.to_owned()))
    }

    /// The value, else the default, else "".
    pub fn text(&self, v: &Variable) -> String {
        self.value(v).unwrap_or_default()
    }

    /// An integer in the variable's range, its default when unset; `None`
    /// when it has none.
    pub fn number(&self, v: &Variable) -> Result<Option<u64>, ConfigError> {
        let Some(raw) = self.value(v) else {
            return Ok(None);
        };
        let (min, max) = match v.allowed {
            Allowed::Number { min, max, .. } => (min, max),
            _ => (0, u64::MAX),
        };
        match raw.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(v.error(&raw)),
        }
    }

    /// [`Env::number`] for a variable that must have a value.
    pub fn required_number(&self, v: &Variable) -> Result<u64, ConfigError> {
        self.number(v)?.ok_or_else(|| v.error(""))
    }

    /// One of `T`'s words, the default when unset.
    pub fn choice<T: Word>(&self, v: &Variable) -> Result<T, ConfigError> {
        let raw = self.text(v);
        T::from_word(&raw).ok_or_else(|| v.error(&raw))
    }

    /// `true` or `false`, the default when unset.
    pub fn flag(&self, v: &Variable) -> Result<bool, ConfigError> {
        self.choice::<bool>(v)
    }

    /// A comma-separated list, blanks removed; the default's when unset.
    pub fn list(&self, v: &Variable) -> Vec<String> {
        self.value(v)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Ab {
        A,
        B,
    }

    impl Word for Ab {
        const WORDS: &'static [(&'static str, Self)] = &[("a", Ab::A), ("b", Ab::B)];
    }

    #[test]
    fn reads_and_reports() {
        let env = Env::from_pairs(&[
            ("N", " 7 "),
            ("BAD", "x"),
            ("C", "b"),
            ("L", "a, b,,c"),
            ("F", "yes"),
            ("E", "  "),
        ]);
        let num = |name, default| Variable::number(name, default, 1, 10, "");
        assert_eq!(env.number(&num("N", "1")), Ok(Some(7)));
        assert_eq!(env.number(&num("MISSING", "3")), Ok(Some(3)));
        assert_eq!(env.number(&num("E", "3")), Ok(Some(3)));
        assert_eq!(env.number(&num("E", "")), Ok(None));
        assert_eq!(
            env.required_number(&num("E", "")).map_err(|e| e.value),
            Err(String::new())
        );
        let e = env
            .number(&Variable::number("BAD", "1", 1, 10, " ms"))
            .expect_err("bad");
        assert_eq!(
            e.to_string(),
            "invalid configuration: BAD=\"x\": an integer from 1 to 10 ms"
        );
        assert_eq!(env.choice(&Variable::words::<Ab>("C", "a")), Ok(Ab::B));
        assert_eq!(
            env.choice(&Variable::words::<Ab>("MISSING", "a")),
            Ok(Ab::A)
        );
        assert_eq!(
            env.choice::<Ab>(&Variable::words::<Ab>("N", "a"))
                .expect_err("bad")
                .allowed,
            "one of: a, b"
        );
        assert_eq!(Ab::B.word(), "b");
        assert_eq!(env.list(&Variable::text("L", "", "")), vec!["a", "b", "c"]);
        assert_eq!(
            env.list(&Variable::text("MISSING", "x,y", "")),
            vec!["x", "y"]
        );
        let flag = |name, default| Variable::flag(name, default);
        assert_eq!(
            env.flag(&flag("F", "false")).expect_err("bad").variable,
            "F"
        );
        assert_eq!(env.flag(&flag("MISSING", "true")), Ok(true));
    }
}
