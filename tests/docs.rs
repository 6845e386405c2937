//! The README's configuration table and the code agree: every variable the
//! crate reads is documented with its default, and nothing else is.

use sqs_forwarder::config::VARIABLES;
use sqs_forwarder::test_support::readme_variables;

#[test]
fn readme_configuration_table_matches_the_code() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    assert_eq!(
        readme_variables(&readme),
        VARIABLES,
        "README table (left) vs config::VARIABLES (right)"
    );
}
