//! The function's own AWS settings (`credentials::own_sdk_config`): with
//! credentials in the environment, as Lambda hands them, they come from the
//! environment provider alone, aws-config's default chain unbuilt; without
//! them, from that chain as before (here: a profile file).
//!
//! A single test on purpose: it changes the process environment (each file
//! under `tests/` is its own process).

use aws_credential_types::provider::ProvideCredentials;
use sqs_forwarder::setup::credentials::own_sdk_config;

fn set(vars: &[(&str, Option<&str>)]) {
    for (k, v) in vars {
        // SAFETY: the only test of this process; nothing else reads or
        // writes the environment meanwhile.
        #[allow(unsafe_code)] // std::env::set_var is unsafe since edition 2024
        unsafe {
            match v {
                Some(v) => std::env::set_var(k, v),
                None => std::env::remove_var(k),
            }
        }
    }
}

/// The provider of `own_sdk_config()` (its type, as its `Debug` names it)
/// and the access key, session token and region it gives.
async fn own() -> (String, String, Option<String>, Option<String>) {
    let sdk = own_sdk_config().await;
    let provider = sdk.credentials_provider().expect("a credentials provider");
    let credentials = provider.provide_credentials().await.expect("credentials");
    (
        format!("{provider:?}"),
        credentials.access_key_id().to_owned(),
        credentials.session_token().map(str::to_owned),
        sdk.region().map(|r| r.as_ref().to_owned()),
    )
}

#[tokio::test]
async fn environment_credentials_without_the_default_chain() {
    let dir = std::env::temp_dir().join(format!("own-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let profile = dir.join("credentials");
    std::fs::write(
        &profile,
        "[default]\naws_access_key_id = AKIDFROMPROFILE\naws_secret_access_key = secret\n",
    )
    .expect("profile file");
    set(&[
        ("AWS_REGION", Some("eu-west-1")),
        ("AWS_ACCESS_KEY_ID", Some("AKIDFROMENV")),
        ("AWS_SECRET_ACCESS_KEY", Some("secret")),
        ("AWS_SESSION_TOKEN", Some("token")),
        ("AWS_PROFILE", None),
        ("AWS_CONFIG_FILE", Some("/nonexistent/aws-config")),
        ("AWS_SHARED_CREDENTIALS_FILE", profile.to_str()),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
    ]);

    // Lambda's way: the environment's credentials, from its provider.
    let (provider, key, token, region) = own().await;
    assert!(
        provider.contains("EnvironmentVariableCredentialsProvider"),
        "{provider}"
    );
    assert!(!provider.contains("DefaultCredentialsChain"), "{provider}");
    assert_eq!(
        (key.as_str(), token.as_deref(), region.as_deref()),
        ("AKIDFROMENV", Some("token"), Some("eu-west-1"))
    );

    // No credentials in the environment: the default chain, which finds
    // the profile's.
    set(&[
        ("AWS_ACCESS_KEY_ID", None),
        ("AWS_SECRET_ACCESS_KEY", None),
        ("AWS_SESSION_TOKEN", None),
    ]);
    let (provider, key, token, _) = own().await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(provider.contains("DefaultCredentialsChain"), "{provider}");
    assert_eq!((key.as_str(), token), ("AKIDFROMPROFILE", None));
}
