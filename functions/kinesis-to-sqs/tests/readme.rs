//! The README's configuration table and the code agree: every variable the
//! function reads is documented with its default, in the same order, and
//! nothing else is.

use kinesis_to_sqs::VARIABLES;
use sqs_forwarder::test_support::readme_variables;

#[test]
fn readme_configuration_table_matches_the_code() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    assert_eq!(
        readme_variables(&readme),
        VARIABLES,
        "README table (left) vs VARIABLES (right)"
    );
}
