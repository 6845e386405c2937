//! The README's configuration table and the code agree: every variable the
//! function reads is documented with its default, in the same order, and
//! nothing else is.

use kinesis_to_sqs::VARIABLES;

#[test]
fn readme_configuration_table_matches_the_code() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("## Configuration")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Configuration section");
    assert!(
        section.contains("| variable | default | allowed | meaning |"),
        "the table has the project's columns"
    );
    let mut documented = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 6, "four columns: {line}");
        let name = cells[1].trim_matches('`').to_owned();
        let default = cells[2].trim_matches('`');
        let default = if default == "(none)" { "" } else { default };
        documented.push((name, default.to_owned()));
    }
    let code: Vec<(String, String)> = VARIABLES
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    assert_eq!(documented, code, "README table (left) vs VARIABLES (right)");
}
