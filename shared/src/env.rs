//! Reading a function's own environment variables with the same rules and
//! errors as the shared [`Config`](crate::Config): trimmed, empty means unset,
//! and a bad value is a [`ConfigError`] naming the variable, the value and
//! what is allowed.

use std::collections::HashMap;

use crate::error::ConfigError;

type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A source of environment variables.
pub struct Env {
    lookup: Lookup,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

impl Env {
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

    /// Any lookup function.
    pub fn from_fn(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
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

    /// The value or a default.
    pub fn string(&self, name: &str, default: &str) -> String {
        self.raw(name).unwrap_or_else(|| default.to_owned())
    }

    /// An integer in `min..=max`, or `default` when unset.
    pub fn number(
        &self,
        name: &str,
        default: u64,
        min: u64,
        max: u64,
        unit: &str,
    ) -> Result<u64, ConfigError> {
        Ok(self
            .optional_number(name, min, max, unit)?
            .unwrap_or(default))
    }

    /// An integer in `min..=max`, or `None` when unset.
    pub fn optional_number(
        &self,
        name: &str,
        min: u64,
        max: u64,
        unit: &str,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        let allowed = || format!("an integer from {min} to {max}{unit}");
        let v: u64 = raw
            .parse()
            .map_err(|_| ConfigError::new(name, &raw, allowed()))?;
        if !(min..=max).contains(&v) {
            return Err(ConfigError::new(name, &raw, allowed()));
        }
        Ok(Some(v))
    }

    /// One of a fixed set of names, or `default` when unset.
    pub fn choice<T: Clone>(
        &self,
        name: &str,
        default: T,
        options: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(default);
        };
        options
            .iter()
            .find(|(n, _)| *n == raw)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                ConfigError::new(name, &raw, format!("one of: {}", names.join(", ")))
            })
    }

    /// `true` or `false`, or `default` when unset.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        self.choice(name, default, &[("true", true), ("false", false)])
    }

    /// A comma-separated list, blanks removed; empty when unset.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.raw(name)
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
        assert_eq!(env.number("N", 1, 1, 10, ""), Ok(7));
        assert_eq!(env.number("MISSING", 3, 1, 10, ""), Ok(3));
        assert_eq!(env.number("E", 3, 1, 10, ""), Ok(3));
        let e = env.number("BAD", 1, 1, 10, " ms").expect_err("bad");
        assert_eq!(
            e.to_string(),
            "invalid configuration: BAD=\"x\": an integer from 1 to 10 ms"
        );
        assert_eq!(env.choice("C", 0, &[("a", 1), ("b", 2)]), Ok(2));
        assert_eq!(
            env.choice("N", 0, &[("a", 1), ("b", 2)])
                .expect_err("bad")
                .allowed,
            "one of: a, b"
        );
        assert_eq!(env.list("L"), vec!["a", "b", "c"]);
        assert_eq!(env.flag("F", false).expect_err("bad").variable, "F");
        assert_eq!(env.flag("MISSING", true), Ok(true));
    }
}
