//! The direct client through an HTTP proxy, as the SDK's client goes through
//! it: the proxy variables of the environment (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, upper- or lower-case), a `CONNECT` tunnel for an
//! `https` endpoint, absolute-form requests for an `http` one, the proxy's
//! credentials from its URL.
//!
//! The endpoint's host name (`sqs.proxy-only.invalid`) does not resolve:
//! only the test proxy (`TestProxy`) knows where it is, as SQS is reachable
//! only through a proxy in a VPC without NAT. The stand-in endpoint answers
//! with the ids of the entries it read, so an answer listing the batch's
//! entries shows that the batch reached it.
//!
//! The variables are read from the process's environment, which a test may
//! not change, so each case runs this test binary again as a child with its
//! own environment; there one batch goes through aws-sdk-sqs and one through
//! the direct client, and both must get through the same way (the proxy
//! records each request it carries). `DirectClient::with_proxy` takes the
//! settings as a value; the last test uses it in this process.

use std::process::{Command, Output};

mod direct_common;

use direct_common::tls::{certificates, start_server};
use direct_common::{both_clients, items};
use hyper_util::client::proxy::matcher::Matcher;
use sqs_forwarder::SqsTransport;
use sqs_forwarder::call::transport::{EntryResult, Transport};
use sqs_forwarder::test_support::{ProxyRequest, TestProxy};

const CHILD: &str = "DIRECT_PROXY_TEST_ENDPOINT";
/// The endpoint's host name: reachable through the test proxy only.
const HIDDEN: &str = "sqs.proxy-only.invalid";
/// The proxy's credentials: a space, `@` and `:` in them, percent-encoded
/// in the URL.
const USER: &str = "proxy user";
const PASSWORD: &str = "p@ss:word";
const USERINFO: &str = "proxy%20user:p%40ss%3Aword";

fn sent_everything(answer: &[(String, EntryResult)]) -> bool {
    let ids: Vec<String> = items().iter().map(|i| i.id.clone()).collect();
    answer.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>() == ids
        && answer
            .iter()
            .all(|(_, r)| matches!(r, EntryResult::Sent { .. }))
}

/// In the child: one batch through aws-sdk-sqs, then one through the direct
/// client, each of which must be sent; the logs on standard error.
#[tokio::test]
async fn child_sends_through_both_clients() {
    let Ok(endpoint) = std::env::var(CHILD) else {
        return; // only as a child of the tests below
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let sdk = direct_common::sdk(&endpoint, None);
    let (direct, via_sdk) = both_clients(&sdk, &format!("{endpoint}/123456789012/q"));
    let answer = via_sdk.send_batch(&items()).await;
    assert!(
        answer.as_deref().is_ok_and(sent_everything),
        "SDK: {answer:?}"
    );
    let answer = direct.send_batch(&items()).await;
    assert!(
        answer.as_deref().is_ok_and(sent_everything),
        "direct: {answer:?}"
    );
}

/// Runs the child against `endpoint` with `env` (and nothing of this
/// process's proxy settings); passes if both clients sent the batch. Its
/// standard error.
fn run_child(endpoint: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "child_sends_through_both_clients",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ]);
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
        "REQUEST_METHOD",
        "SSL_CERT_DIR",
    ] {
        cmd.env_remove(name);
    }
    cmd.env(CHILD, endpoint).env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child with {env:?} failed:\n{stdout}\n{stderr}"
    );
    stderr
}

fn hidden_proxy(credentials: Option<(&str, &str)>) -> TestProxy {
    TestProxy::start(&[(HIDDEN, "127.0.0.1")], credentials).expect("proxy starts")
}

/// `n` requests of `method` to `target`, none refused, with `authorization`
/// (a `POST`: a `SendMessageBatch`).
fn carried(n: usize, method: &str, target: &str, authorization: Option<&str>) -> Vec<ProxyRequest> {
    vec![
        ProxyRequest {
            method: method.into(),
            target: target.into(),
            authorization: authorization.map(str::to_owned),
            amz_target: (method == "POST").then(|| "AmazonSQS.SendMessageBatch".to_owned()),
            refused: false,
        };
        n
    ]
}

#[test]
fn an_http_endpoint_through_a_forward_proxy() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (_server, port) = start_server(None);
    let endpoint = format!("http://{HIDDEN}:{port}");
    for variable in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        let proxy = hidden_proxy(None);
        let logs = run_child(&endpoint, &[(variable, &proxy.url())]);
        assert_eq!(
            proxy.seen(),
            carried(2, "POST", &format!("{endpoint}/"), None),
            "{variable}"
        );
        assert!(
            logs.contains("calls to the endpoint go through the proxy")
                && logs.contains(&proxy.url())
                && logs.contains("forward proxy"),
            "{logs}"
        );
    }
}

#[test]
fn an_https_endpoint_through_a_connect_tunnel() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("direct-proxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ca, leaf, key) = certificates(&dir, "hidden", HIDDEN);
    let (_server, port) = start_server(Some((&leaf, &key)));
    let endpoint = format!("https://{HIDDEN}:{port}");
    for variable in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
        let proxy = hidden_proxy(None);
        let logs = run_child(
            &endpoint,
            &[(variable, &proxy.url()), ("SSL_CERT_FILE", &ca)],
        );
        assert_eq!(
            proxy.seen(),
            carried(2, "CONNECT", &format!("{HIDDEN}:{port}"), None),
            "{variable}"
        );
        assert!(logs.contains("CONNECT tunnel"), "{logs}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_proxy_credentials_come_from_its_url_and_stay_out_of_the_logs() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("direct-proxy-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ca, leaf, key) = certificates(&dir, "hidden-auth", HIDDEN);
    let (_https, https_port) = start_server(Some((&leaf, &key)));
    let (_http, http_port) = start_server(None);
    let basic = "Basic cHJveHkgdXNlcjpwQHNzOndvcmQ="; // base64("proxy user:p@ss:word")
    for (endpoint, variable, method, target) in [
        (
            format!("https://{HIDDEN}:{https_port}"),
            "HTTPS_PROXY",
            "CONNECT",
            format!("{HIDDEN}:{https_port}"),
        ),
        (
            format!("http://{HIDDEN}:{http_port}"),
            "HTTP_PROXY",
            "POST",
            format!("http://{HIDDEN}:{http_port}/"),
        ),
    ] {
        let proxy = hidden_proxy(Some((USER, PASSWORD)));
        let url = format!("http://{USERINFO}@{}", proxy.addr());
        let logs = run_child(&endpoint, &[(variable, &url), ("SSL_CERT_FILE", &ca)]);
        assert_eq!(
            proxy.seen(),
            carried(2, method, &target, Some(basic)),
            "{variable}"
        );
        assert!(logs.contains("authenticated=true"), "{logs}");
        for secret in [PASSWORD, "p%40ss", USERINFO, basic] {
            assert!(!logs.contains(secret), "{secret} in the logs:\n{logs}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_proxy_goes_straight_to_the_endpoint() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (_server, port) = start_server(None);
    let by_address = format!("http://127.0.0.1:{port}");
    let by_name = format!("http://localhost:{port}");
    for (endpoint, variable, rule) in [
        (&by_address, "NO_PROXY", "127.0.0.1"),
        (&by_address, "no_proxy", "example.com, 127.0.0.0/8"),
        (&by_name, "NO_PROXY", ".localhost"),
        (&by_name, "NO_PROXY", "*"),
    ] {
        let proxy = hidden_proxy(None);
        run_child(endpoint, &[("HTTP_PROXY", &proxy.url()), (variable, rule)]);
        assert_eq!(proxy.seen(), vec![], "{endpoint} {variable}={rule}");
    }
    // Without NO_PROXY the same endpoint goes through the proxy; so does an
    // IP address with `NO_PROXY=*`, which the SDK's matcher applies to host
    // names only.
    for rule in [None, Some("*")] {
        let proxy = hidden_proxy(None);
        let mut env = vec![("HTTP_PROXY", proxy.url())];
        env.extend(rule.map(|r| ("NO_PROXY", r.to_owned())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_child(&by_address, &env);
        assert_eq!(
            proxy.seen(),
            carried(2, "POST", &format!("{by_address}/"), None),
            "NO_PROXY={rule:?}"
        );
    }
}

#[test]
fn upper_case_first_and_bad_values_ignored_as_the_sdk_does() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let (_server, port) = start_server(None);
    let endpoint = format!("http://{HIDDEN}:{port}");
    // Both spellings set: the upper-case one is taken.
    let (upper, lower) = (hidden_proxy(None), hidden_proxy(None));
    run_child(
        &endpoint,
        &[("HTTP_PROXY", &upper.url()), ("http_proxy", &lower.url())],
    );
    assert_eq!(upper.seen().len(), 2);
    assert_eq!(lower.seen(), vec![]);
    // A scheme-less proxy URL is http://.
    let proxy = hidden_proxy(None);
    run_child(&endpoint, &[("HTTP_PROXY", &proxy.addr().to_string())]);
    assert_eq!(proxy.seen().len(), 2);
    // An unusable HTTP_PROXY is ignored (with a warning naming it, not its
    // value) and ALL_PROXY taken instead.
    let proxy = hidden_proxy(None);
    let logs = run_child(
        &endpoint,
        &[
            ("HTTP_PROXY", "ftp://hunter2@h:1"),
            ("ALL_PROXY", &proxy.url()),
        ],
    );
    assert_eq!(proxy.seen().len(), 2);
    assert!(
        logs.contains("HTTP_PROXY is not a proxy URL that can be used")
            && !logs.contains("hunter2"),
        "{logs}"
    );
}

/// The settings as a value (`DirectClient::with_proxy`): through the proxy
/// they name, and nowhere without one.
#[tokio::test]
async fn the_proxy_settings_can_be_given() {
    let (_server, port) = start_server(None);
    let endpoint = format!("http://{HIDDEN}:{port}");
    let proxy = hidden_proxy(None);
    let sdk = direct_common::sdk(&endpoint, None);
    let client = sqs_forwarder::setup::client::sqs_client(&sdk);
    let queue = format!("{endpoint}/123456789012/q");
    let through = Matcher::builder().http(proxy.url()).build();
    let direct = sqs_forwarder::call::direct::DirectClient::with_proxy(&sdk, &client, &through)
        .expect("direct client");
    let answer = SqsTransport::direct(direct, &queue)
        .send_batch(&items())
        .await;
    assert!(answer.as_deref().is_ok_and(sent_everything), "{answer:?}");
    assert_eq!(
        proxy.seen(),
        carried(1, "POST", &format!("{endpoint}/"), None)
    );
    // An HTTPS proxy only, or none: the name does not resolve.
    for matcher in [
        Matcher::builder().https(proxy.url()).build(),
        Matcher::builder().build(),
    ] {
        let direct = sqs_forwarder::call::direct::DirectClient::with_proxy(&sdk, &client, &matcher)
            .expect("direct client");
        let answer = SqsTransport::direct(direct, &queue)
            .send_batch(&items())
            .await;
        assert!(
            format!("{answer:?}").contains("ConnectionError"),
            "{answer:?}"
        );
    }
    assert_eq!(proxy.seen().len(), 1);
}
