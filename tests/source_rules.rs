//! Two rules of the code base, checked on the tree: the functions and the
//! replay command name the shared failure codes by their constants
//! (`sqs_forwarder::send::codes`), never by a literal that could drift from
//! them; and no source file outside the tests passes 500 lines.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` files under `dir`, skipping `target/` and test-only files.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "tests" | "benches" | "fuzz" | ".git"
            ) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && !matches!(name.as_str(), "tests.rs" | "testing.rs") {
            out.push(path);
        }
    }
}

/// A file's text before its first `#[cfg(test)]` (the test module, by this
/// code base's convention, comes last).
fn non_test_part(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The shared failure codes, read from `shared/src/send/codes.rs`.
fn shared_codes() -> Vec<String> {
    let path = root().join("shared/src/send/codes.rs");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .filter(|l| l.starts_with("pub const ") && l.contains(": &str = \""))
        .filter_map(|l| l.split('"').nth(1).map(str::to_owned))
        .collect()
}

#[test]
fn functions_name_the_shared_failure_codes_by_their_constants() {
    let codes = shared_codes();
    assert!(codes.len() > 20, "codes read from codes.rs: {codes:?}");
    let mut files = Vec::new();
    sources(&root().join("functions"), &mut files);
    sources(&root().join("replay/src"), &mut files);
    assert!(files.len() > 40, "function sources found: {}", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        for (n, line) in non_test_part(&text).lines().enumerate() {
            let code_part = line.split("//").next().unwrap_or("");
            for code in &codes {
                if code_part.contains(&format!("\"{code}\"")) {
                    found.push(format!("{}:{}: \"{code}\"", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "shared failure codes spelled as literals (use sqs_forwarder::send::codes):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_outside_the_tests_passes_500_lines() {
    let mut files = Vec::new();
    for dir in ["functions", "shared/src", "replay/src", "bench"] {
        sources(&root().join(dir), &mut files);
    }
    assert!(files.len() > 60, "sources found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let n = non_test_part(&text).lines().count();
            (n > 500).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files past 500 lines:\n{}",
        long.join("\n")
    );
}
