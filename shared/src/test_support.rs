//! Helpers for the tests of this workspace's crates; not part of the API.
//! Behind the `test-support` feature, which only dev-dependencies (and the
//! test-only crates `tests/` and `fuzz/`) enable: the functions' binaries
//! never carry it.

pub mod cpu_cap;
pub mod fake_sqs;
pub mod http_proxy;
pub mod runtime_api;
pub mod slow_sqs;

use crate::setup::env::{Allowed, Variable};

pub use fake_sqs::{Attempt, Call, FakeSqs, Reply, Seen};
pub use http_proxy::{ProxyRequest, TestProxy};

/// A sample event of the workspace's `events/` directory (`name`:
/// `kinesis-small.json`, ...), as JSON.
pub fn sample_event(name: &str) -> serde_json::Value {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Cases for a fuzz-style property test: `PROPTEST_CASES` when set (for
/// long runs), else `default` (a short smoke in the normal test run).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The table header every configuration table has.
pub const README_TABLE_HEADER: &str = "| variable | default | allowed | meaning |";

/// The variables a README documents, as `(name, default)` in table order
/// (a default of `(none)` reads as `""`), to compare with a crate's
/// `VARIABLES`.
///
/// They come from the table in the README's `## Configuration` section,
/// which must have the project's shape, or this panics saying what is off:
/// the header [`README_TABLE_HEADER`] as the section's first table line, then
/// a separator, then rows of exactly four cells, each starting with a
/// backticked name, and no such row anywhere else in the section.
pub fn readme_variables(markdown: &str) -> Vec<(&str, &str)> {
    let section = markdown
        .split("## Configuration")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Configuration section in the README");
    let mut lines = section.lines().skip_while(|l| !l.starts_with('|'));
    assert_eq!(
        lines.next(),
        Some(README_TABLE_HEADER),
        "the Configuration section's table has the project's columns"
    );
    let table: Vec<&str> = lines
        .skip(1) // the separator
        .take_while(|l| l.starts_with('|'))
        .collect();
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(
        table, rows,
        "every row of the table, and nothing else in the section, documents a `VARIABLE`"
    );
    rows.iter()
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 6, "four columns: {line}");
            let name = cells[1].trim_matches('`');
            let default = cells[2].trim_matches('`');
            (name, if default == "(none)" { "" } else { default })
        })
        .collect()
}

/// The one check of a README's configuration table against a crate's table
/// of variables: the same variables in the same order, each with the same
/// default (the README's `(none)` for none), and for a number or a choice of
/// words, an `allowed` cell that starts with the range (`1..10`) or the words
/// (`` `fail`, `drop`, `offload` ``) the code allows.
pub fn assert_readme_documents(readme: &str, variables: &[Variable]) {
    let documented: Vec<(&str, &str)> = readme_variables(readme);
    let code: Vec<(&str, &str)> = variables.iter().map(|v| (v.name, v.default)).collect();
    assert_eq!(
        documented, code,
        "README table (left) vs the crate's VARIABLES (right)"
    );
    let allowed = readme_allowed(readme);
    for (v, cell) in variables.iter().zip(allowed) {
        let expected = match v.allowed {
            Allowed::Number { min, max, .. } => format!("{min}..{max}"),
            Allowed::Words(words) => words()
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Allowed::Text(_) => continue,
        };
        assert!(
            cell.starts_with(&expected),
            "README: {}'s allowed cell {cell:?} should start with {expected:?}",
            v.name
        );
    }
}

/// The `allowed` cells of a README's configuration table, in order.
fn readme_allowed(markdown: &str) -> Vec<&str> {
    let section = markdown
        .split("## Configuration")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or("");
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').map(str::trim).nth(3))
        .collect()
}

/// A bad value for a configuration variable, and what its error must say.
#[derive(Debug, Clone, Copy)]
pub struct BadValue<'a> {
    /// The variable.
    pub variable: &'a str,
    /// Its bad value.
    pub value: &'a str,
    /// Other variables it needs to be read at all.
    pub context: &'a [(&'a str, &'a str)],
    /// The value as the error shows it (a password masked).
    pub shown: &'a str,
    /// A word the error's `allowed` text must contain.
    pub allowed: &'a str,
}

impl<'a> BadValue<'a> {
    /// A case read on its own, its value shown as given.
    pub const fn new(variable: &'a str, value: &'a str, allowed: &'a str) -> Self {
        BadValue {
            variable,
            value,
            context: &[],
            shown: value,
            allowed,
        }
    }
}

/// Fails naming each of `variables` that no case in `cases` covers.
pub fn assert_every_variable_has_a_case(variables: &[Variable], cases: &[BadValue<'_>]) {
    for Variable { name, .. } in variables {
        assert!(
            cases.iter().any(|c| c.variable == *name),
            "no bad-value case for {name}"
        );
    }
}

/// Reads each case (its context, then its bad value) with `read` and checks
/// the error: it names the variable and the shown value, its `allowed` text
/// contains the case's word, and it reads
/// `invalid configuration: VARIABLE="value": allowed`. Returns the errors,
/// for checks of the caller's own.
pub fn assert_bad_values_are_named<T>(
    cases: &[BadValue<'_>],
    read: impl Fn(&crate::Env) -> Result<T, crate::ConfigError>,
) -> Vec<crate::ConfigError> {
    cases
        .iter()
        .map(|case| {
            let mut vars = case.context.to_vec();
            vars.push((case.variable, case.value));
            let Err(e) = read(&crate::Env::from_pairs(&vars)) else {
                panic!("{}={:?} was accepted", case.variable, case.value);
            };
            assert_eq!(
                (e.variable.as_str(), e.value.as_str()),
                (case.variable, case.shown),
                "{e}"
            );
            assert!(e.allowed.contains(case.allowed), "{}: {e}", case.variable);
            assert_eq!(
                e.to_string(),
                format!(
                    "invalid configuration: {}={:?}: {}",
                    case.variable, case.shown, e.allowed
                )
            );
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# x\n\n## Configuration\n\nText.\n\n\
        | variable | default | allowed | meaning |\n|---|---|---|---|\n\
        | `A` | `1` | 1..2 | a |\n| `B` | (none) | text | b |\n\nMore.\n\n## Next\n\n| `C` | | | |\n";

    #[test]
    fn reads_the_configuration_table() {
        assert_eq!(readme_variables(README), [("A", "1"), ("B", "")]);
    }

    #[test]
    #[should_panic(expected = "project's columns")]
    fn other_columns_are_refused() {
        readme_variables(&README.replace("| meaning |", "| what |"));
    }

    #[test]
    #[should_panic(expected = "four columns")]
    fn rows_of_other_widths_are_refused() {
        readme_variables(&README.replace("| a |", "| a | extra |"));
    }

    #[test]
    #[should_panic(expected = "nothing else in the section")]
    fn rows_without_a_name_are_refused() {
        readme_variables(&README.replace("| `B` |", "| B |"));
    }
}
