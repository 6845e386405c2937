//! Assumed roles end to end against the local endpoint: moto serves STS as
//! well as SQS, and gives each assumed role's credentials the role's account.
//! A queue created in the role's account is therefore found only by requests
//! signed with the role's credentials: the function's own ("test", account
//! 123456789012) get `QueueDoesNotExist`. That makes "the forwarder sent as
//! the role" something the local SQS can tell. (S3 in moto lets any
//! account read any bucket, so which credentials s3-to-sqs reads objects
//! with is checked on the client's credentials instead.)

use aws_config::BehaviorVersion;
use aws_sdk_sqs::config::{Credentials, Region};
use forwarder_e2e::{create_queue, drain, endpoint};
use sqs_forwarder::setup::credentials::assume_role;
use sqs_forwarder::setup::startup::connect_sdk;
use sqs_forwarder::{Config, Message, Outcome, SetupError};

const ROLE_ACCOUNT: &str = "210987654321";

/// The function's own settings, pointed at the local endpoint (SQS and STS).
async fn function_sdk() -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .empty_test_environment()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint())
        .credentials_provider(Credentials::new("test", "test", None, None, "e2e"))
        .load()
        .await
}

fn config(vars: &[(&str, &str)]) -> Config {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_reach_a_queue_in_the_role_account_only_as_the_role() {
    let role_arn = format!("arn:aws:iam::{ROLE_ACCOUNT}:role/e2e-sender");
    let vars = |url: &str| {
        config(&[
            ("QUEUE_URL", url),
            ("ASSUME_ROLE_ARN", &role_arn),
            ("ASSUME_ROLE_SESSION_NAME", "e2e"),
        ])
    };
    // The role's account gets a queue (created as the role).
    let role = vars("http://127.0.0.1:1/0/placeholder")
        .assume_role
        .expect("a role");
    let as_role = assume_role(function_sdk().await, &role)
        .await
        .expect("moto's STS lets anyone assume any role");
    let role_sqs = aws_sdk_sqs::Client::new(&as_role);
    let url = create_queue(&role_sqs, "assumed-role", &[]).await;
    assert!(url.contains(ROLE_ACCOUNT), "{url}");

    // As the function itself, the queue is not there.
    let err = connect_sdk(
        &function_sdk().await,
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect_err("another account's queue");
    match &err {
        SetupError::Queue { code, .. } => assert!(
            code.contains("NonExistentQueue") || code.contains("QueueDoesNotExist"),
            "{err}"
        ),
        other => panic!("expected a queue error, got {other:?}"),
    }

    // With ASSUME_ROLE_ARN the forwarder reaches it.
    let c = vars(&url);
    let sdk = assume_role(
        function_sdk().await,
        c.assume_role.as_ref().expect("a role"),
    )
    .await
    .expect("assume the role");
    let forwarder = connect_sdk(&sdk, &c, sqs_forwarder::GroupIds::FromConfig)
        .await
        .expect("connect as the role");
    let messages: Vec<_> = (0..3)
        .map(|i| Message::new(format!("as-role-{i}"), i))
        .collect();
    let outcomes = forwarder.send_all(messages, None).await;
    for o in &outcomes {
        assert!(matches!(o.outcome, Outcome::Sent { .. }), "{o:?}");
    }
    let mut bodies: Vec<String> = drain(&role_sqs, &url, 3)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["as-role-0", "as-role-1", "as-role-2"]);
}

/// s3-to-sqs lines mode: with `ASSUME_ROLE_ARN`, objects are still read with
/// the function's own credentials (the role is for the queue; the input
/// bucket and its `s3:GetObject` grant belong to the function's own role).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_to_sqs_reads_objects_as_itself_not_as_the_role() {
    use aws_credential_types::provider::ProvideCredentials;
    let role_arn = format!("arn:aws:iam::{ROLE_ACCOUNT}:role/e2e-reader");
    let c = config(&[
        ("QUEUE_URL", "http://127.0.0.1:1/0/placeholder"),
        ("ASSUME_ROLE_ARN", &role_arn),
    ]);
    let as_role = assume_role(
        function_sdk().await,
        c.assume_role.as_ref().expect("a role"),
    )
    .await
    .expect("moto's STS lets anyone assume any role");
    let key_of = |sdk: aws_config::SdkConfig| async move {
        sdk.credentials_provider()
            .expect("a credentials provider")
            .provide_credentials()
            .await
            .expect("credentials")
            .access_key_id()
            .to_owned()
    };
    let own_key =
        std::env::var("AWS_ACCESS_KEY_ID").expect("AWS_ACCESS_KEY_ID is set for the tests");
    let role_key = key_of(as_role.clone()).await;
    assert_ne!(
        role_key, own_key,
        "moto gives the role credentials of its own"
    );
    // With the role: the function's own credentials read the objects.
    assert_eq!(
        key_of(s3_to_sqs::reader_sdk(&as_role, true).await).await,
        own_key
    );
    // Without a role: the one configuration there is.
    assert_eq!(
        key_of(s3_to_sqs::reader_sdk(&function_sdk().await, false).await).await,
        "test"
    );
}
