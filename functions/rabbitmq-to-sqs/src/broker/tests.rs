#[test]
fn plain_text_to_a_public_host_and_passwords_in_the_url_are_warned_about() {
    let warnings = |url: &str, secret: bool| {
        BrokerUrl::parse(url)
            .expect("valid url")
            .start_warnings(secret)
    };
    // Plain text to a public address or a name: a warning naming amqps.
    for url in [
        "amqp://user@broker.example.com/%2f",
        "amqp://user@203.0.113.7:5672/%2f",
    ] {
        let w = warnings(url, false);
        assert_eq!(w.len(), 1, "{url}: {w:?}");
        assert!(w[0].contains("use amqps://"), "{}", w[0]);
    }
    // Loopback, private, TLS: nothing.
    for url in [
        "amqp://user@localhost/%2f",
        "amqp://user@127.0.0.1:5672/%2f",
        "amqp://user@10.1.2.3/%2f",
        "amqp://user@172.20.0.5/%2f",
        "amqp://user@192.168.1.9/%2f",
        "amqps://user@b-1234.mq.eu-west-1.amazonaws.com:5671/%2f",
    ] {
        assert_eq!(warnings(url, false), Vec::<String>::new(), "{url}");
    }
    // A password in the URL: use RABBITMQ_PASSWORD_SECRET (or drop it
    // from the URL when the secret is set); the password is not shown.
    let w = warnings("amqps://user:s3cr%2Fet@broker.example.com/%2f", false);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("RABBITMQ_PASSWORD_SECRET"), "{}", w[0]);
    assert!(!w[0].contains("s3cr"), "{}", w[0]);
    let w = warnings("amqps://user:s3cret@broker.example.com/%2f", true);
    assert!(w[0].contains("remove it from the URL"), "{}", w[0]);
    // Both at once: two warnings.
    assert_eq!(warnings("amqp://user:pw@198.51.100.1/%2f", false).len(), 2);
    // IPv6 literals (lapin's URI parser itself turns them into
    // `localhost`, so only the address check sees them).
    for (host, local) in [
        ("[::1]", true),
        ("[fd00::5]", true),
        ("fe80::1", true),
        ("::ffff:10.0.0.1", true),
        ("[2001:db8::1]", false),
        ("169.254.1.1", true),
        ("8.8.8.8", false),
    ] {
        assert_eq!(is_local_or_private(host), local, "{host}");
    }
    // No password in the text (the parser's default `guest` is not one).
    assert!(
        !BrokerUrl::parse("amqps://h/%2f")
            .expect("valid")
            .has_password()
    );
}

use super::*;

#[test]
fn redaction_hides_the_password_only() {
    assert_eq!(
        redact("amqp://guest:guest@localhost:5672/%2f"),
        "amqp://guest:***@localhost:5672/%2f"
    );
    assert_eq!(
        redact("amqps://svc:p%40ss/w?rd@host/vh?heartbeat=10"),
        "amqps://svc:***@host/vh?heartbeat=10"
    );
    assert_eq!(redact("amqp://only-user@host/"), "amqp://only-user@host/");
    assert_eq!(redact("amqp://host:5672/"), "amqp://host:5672/");
    assert_eq!(redact("guest:pw@host"), "(hidden: not a URL)");
}

#[test]
fn scrubbing_hides_plain_and_encoded_passwords() {
    let mut s = Secrets::default();
    s.add("p@ss word");
    assert_eq!(
        s.scrub("login p@ss word failed; url amqp://u:p%40ss%20word@h"),
        "login *** failed; url amqp://u:***@h"
    );
    assert_eq!(format!("{s:?}"), "Secrets(2 hidden)");
    s.add("");
    assert_eq!(s.scrub("nothing"), "nothing");
}

#[test]
fn passwords_are_encoded_as_a_url_writes_them() {
    // Everything but RFC 3986's unreserved characters, UTF-8 bytes
    // one by one, in upper-case hex.
    assert_eq!(percent_encode("aZ09-._~"), "aZ09-._~");
    assert_eq!(
        percent_encode("p@ss/w:rd %é"),
        "p%40ss%2Fw%3Ard%20%25%C3%A9"
    );
}

#[test]
fn urls_parse_with_defaults_and_overrides() {
    let u = BrokerUrl::parse("amqps://svc:pw@b-1.mq.us-east-1.amazonaws.com/prod").expect("ok");
    assert!(u.tls());
    assert_eq!(u.username(), "svc");
    assert_eq!(u.vhost(), "prod");
    assert_eq!(
        format!("{u:?}"),
        "BrokerUrl(amqps://svc:***@b-1.mq.us-east-1.amazonaws.com/prod)"
    );
    let uri = u.connect_uri(None, 30, Duration::from_secs(5));
    assert_eq!(uri.authority.port, 5671);
    assert_eq!(uri.query.heartbeat, Some(30));
    assert_eq!(uri.query.connection_timeout, Some(5000));
    let c = Credentials {
        username: Some("other".into()),
        password: "from-secret".into(),
    };
    let uri = u.connect_uri(Some(&c), 30, Duration::from_secs(5));
    assert_eq!(uri.authority.userinfo.username, "other");
    assert_eq!(uri.authority.userinfo.password, "from-secret");
    assert!(!format!("{c:?}").contains("from-secret"));

    let u = BrokerUrl::parse("amqp://guest:guest@localhost/%2f?heartbeat=7").expect("ok");
    assert!(!u.tls());
    assert_eq!(u.vhost(), "/");
    let uri = u.connect_uri(None, 30, Duration::from_secs(5));
    assert_eq!(uri.authority.port, 5672);
    assert_eq!(uri.query.heartbeat, Some(7), "the URL's own value wins");
}

#[test]
fn bad_urls_say_why_without_the_password() {
    for raw in [
        "http://u:Secr3t@host/",
        "amqp://u:Secr3t@ho st/",
        "amqp://u:Secr3t@host:70000/",
        "amqp://u:Secr3t@host/?heartbeat=soon",
    ] {
        let e = BrokerUrl::parse(raw).expect_err(raw);
        assert!(!e.contains("Secr3t"), "{raw}: {e}");
        assert!(!e.is_empty());
    }
}

#[test]
fn only_plain_login_is_accepted() {
    // The function's client logs in with PLAIN only (Amazon MQ's and
    // RabbitMQ's default); another mechanism is refused at start, by name.
    for raw in [
        "amqp://u:Secr3t@host/?auth_mechanism=external",
        "amqp://u:Secr3t@host/?auth_mechanism=amqplain",
    ] {
        let e = BrokerUrl::parse(raw).expect_err(raw);
        assert!(e.contains("only PLAIN"), "{raw}: {e}");
        assert!(!e.contains("Secr3t"), "{raw}: {e}");
    }
    assert!(BrokerUrl::parse("amqp://u:Secr3t@host/?auth_mechanism=plain").is_ok());
    assert!(BrokerUrl::parse("amqp://u:Secr3t@host/").is_ok());
}
