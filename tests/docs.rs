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
        sqs_forwarder::config::VARIABLES,
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
