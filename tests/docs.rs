//! The configuration tables and the code agree: every variable a crate reads
//! is documented with its default (and, for a number or a choice, what it
//! allows), in the same order, and nothing else is: the shared crate's in
//! `docs/configuration.md`, each function's in its README. One check (`assert_readme_documents`), driven by each crate's table.

use sqs_forwarder::test_support::assert_readme_documents;

fn readme(path: &str) -> String {
    let full = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

#[test]
fn shared_configuration_table_matches_the_code() {
    assert_readme_documents(
        &readme("docs/configuration.md"),
        sqs_forwarder::setup::config::VARIABLES,
    );
}

#[test]
fn kinesis_readme_table_matches_the_code() {
    assert_readme_documents(
        &readme("functions/kinesis-to-sqs/README.md"),
        kinesis_to_sqs::VARIABLES,
    );
}

#[test]
fn s3_readme_table_matches_the_code() {
    assert_readme_documents(
        &readme("functions/s3-to-sqs/README.md"),
        s3_to_sqs::VARIABLES,
    );
}

#[test]
fn apigw_readme_table_matches_the_code() {
    assert_readme_documents(
        &readme("functions/apigw-to-sqs/README.md"),
        apigw_to_sqs::VARIABLES,
    );
}

#[test]
fn rabbitmq_readme_table_matches_the_code() {
    assert_readme_documents(
        &readme("functions/rabbitmq-to-sqs/README.md"),
        rabbitmq_to_sqs::VARIABLES,
    );
}

/// The characters docs/configuration.md says SQS takes in a group id are
/// exactly those the code keeps (every other value is hashed): the ASCII
/// letters and digits and the punctuation it lists, and nothing else (no
/// space, no control character, nothing outside ASCII).
#[test]
fn the_group_id_characters_the_docs_name_are_the_codes() {
    use sqs_forwarder::message::fifo_id::{MAX_ID_CHARS, is_valid};
    let text = readme("docs/configuration.md");
    let lead = "or one\n  of the 32 punctuation characters `` ";
    let start = text
        .find(lead)
        .unwrap_or_else(|| panic!("docs/configuration.md names the punctuation after {lead:?}"))
        + lead.len();
    let end = start + text[start..].find(" ``").expect("the list's closing ``");
    let punctuation: Vec<char> = text[start..end].chars().collect();
    assert_eq!(punctuation.len(), 32, "{punctuation:?}");
    assert!(text.contains(&format!(
        "SQS takes as a group id\n  1 to {MAX_ID_CHARS} characters"
    )));
    let named = |c: char| c.is_ascii_alphanumeric() || punctuation.contains(&c);
    for c in (0u8..=127).map(char::from).chain(['é', 'α', '\u{a0}']) {
        assert_eq!(
            is_valid(&c.to_string()),
            named(c),
            "{c:?}: the docs and fifo_id::is_valid disagree"
        );
    }
    assert!(!is_valid("acme corp"));
}

/// Every relative link in the project's Markdown files names a file that
/// exists and, for a `#fragment` into a Markdown file, a heading there (as
/// GitHub makes its anchors), so pages moved between the README, `docs/`
/// and `bench/` stay reachable. Code blocks are skipped.
#[test]
fn markdown_links_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(
        files.len() > 10,
        "found the project's Markdown files: {files:?}"
    );
    let mut broken = Vec::new();
    for file in &files {
        let text = outside_code_blocks(&std::fs::read_to_string(file).unwrap());
        for link in relative_links(&text) {
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let ok = target.exists()
                && (fragment.is_empty()
                    || target.extension().is_none_or(|e| e != "md")
                    || anchors(&std::fs::read_to_string(&target).unwrap())
                        .iter()
                        .any(|a| a == fragment));
            if !ok {
                broken.push(format!(
                    "{}: {link}",
                    file.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere: {broken:#?}");
}

/// The Markdown files under `dir`, leaving out hidden and build directories
/// (and `dist/`, a release's copies).
fn markdown_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "dist" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text with its fenced code blocks left out.
fn outside_code_blocks(text: &str) -> String {
    text.split("```").step_by(2).collect::<Vec<_>>().join("\n")
}

/// The targets of `[text](target)` links that are not URLs.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let end = rest.find([')', ' ', '\n'])?;
            let link = &rest[..end];
            (!link.is_empty() && !link.contains("://") && !link.starts_with("mailto:"))
                .then(|| link.to_string())
        })
        .collect()
}

/// The anchors GitHub gives a document's headings: lower case, spaces to
/// `-`, everything but letters, digits, `-` and `_` left out.
fn anchors(text: &str) -> Vec<String> {
    outside_code_blocks(text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// The check used when pages are moved or shortened
/// (`scripts/check-moved-text.sh REV:PATH ...`: every paragraph, list item,
/// heading, table row and code line of the old pages still somewhere in the
/// Markdown files) tells a unit kept, moved or reworded from one deleted: its
/// self-test runs it on pages made for the purpose, with a paragraph, a table
/// row and a code line deleted, and must see exactly those missing.
#[test]
fn the_moved_text_check_finds_what_was_deleted() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/check_moved_text.py"))
        .arg("--self-test")
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("moved-text self-test: 12 passed, 0 failed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
