//! The broker password from AWS Secrets Manager (`RABBITMQ_PASSWORD_SECRET`).
//!
//! The secret's string is either the password itself or a JSON object with
//! `password` and optionally `username`, the shape Amazon MQ and its Lambda
//! event source use. It is read at cold start and read again once when the
//! broker refuses the login, so a rotated password is picked up without a
//! redeploy.

use tokio::sync::Mutex;

use crate::broker::{BrokerError, Credentials};

/// Read credentials from the secret's text.
pub fn parse_secret(secret_id: &str, text: &str) -> Result<Credentials, BrokerError> {
    let err = |detail: &str| BrokerError::Secret {
        secret: secret_id.to_owned(),
        detail: detail.to_owned(),
    };
    if text.trim_start().starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|_| err("the secret starts with '{' but is not a JSON object"))?;
        let password = v
            .get("password")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| err("the JSON secret has no string field \"password\""))?;
        let username = v
            .get("username")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        if password.is_empty() {
            return Err(err("the password in the secret is empty"));
        }
        return Ok(Credentials {
            username,
            password: password.to_owned(),
        });
    }
    if text.is_empty() {
        return Err(err("the secret is empty"));
    }
    Ok(Credentials {
        username: None,
        password: text.to_owned(),
    })
}

/// Where the password comes from, with the last value read.
#[derive(Debug)]
pub struct SecretSource {
    client: aws_sdk_secretsmanager::Client,
    secret_id: String,
    cached: Mutex<Option<Credentials>>,
}

impl SecretSource {
    /// A source for `secret_id` (a name or an ARN).
    pub fn new(client: aws_sdk_secretsmanager::Client, secret_id: impl Into<String>) -> Self {
        SecretSource {
            client,
            secret_id: secret_id.into(),
            cached: Mutex::new(None),
        }
    }

    /// The secret id.
    pub fn secret_id(&self) -> &str {
        &self.secret_id
    }

    /// The credentials, read once and then cached.
    pub async fn get(&self) -> Result<Credentials, BrokerError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            return Ok(c.clone());
        }
        let fresh = self.fetch().await?;
        *cached = Some(fresh.clone());
        Ok(fresh)
    }

    /// Read the secret again (after the broker refused the cached password).
    /// Returns whether the credentials changed.
    pub async fn refresh(&self) -> Result<bool, BrokerError> {
        let fresh = self.fetch().await?;
        let mut cached = self.cached.lock().await;
        let changed = cached.as_ref() != Some(&fresh);
        *cached = Some(fresh);
        Ok(changed)
    }

    async fn fetch(&self) -> Result<Credentials, BrokerError> {
        let out = self
            .client
            .get_secret_value()
            .secret_id(&self.secret_id)
            .send()
            .await
            .map_err(|e| {
                let (code, message) = sqs_forwarder::send::codes::sdk_error_parts(&e);
                BrokerError::Secret {
                    secret: self.secret_id.clone(),
                    detail: format!("{code}: {message}"),
                }
            })?;
        let text = match (out.secret_string(), out.secret_binary()) {
            (Some(s), _) => s.to_owned(),
            (None, Some(b)) => {
                String::from_utf8(b.as_ref().to_vec()).map_err(|_| BrokerError::Secret {
                    secret: self.secret_id.clone(),
                    detail: "the binary secret is not UTF-8 text".into(),
                })?
            }
            (None, None) => {
                return Err(BrokerError::Secret {
                    secret: self.secret_id.clone(),
                    detail: "the secret has no value".into(),
                });
            }
        };
        parse_secret(&self.secret_id, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_json_secrets() {
        let c = parse_secret("s", "pa:ss@word").expect("plain");
        assert_eq!(c.username, None);
        assert_eq!(c.password, "pa:ss@word");
        let c = parse_secret("s", r#"{"username":"svc","password":"pw"}"#).expect("json");
        assert_eq!(c.username.as_deref(), Some("svc"));
        assert_eq!(c.password, "pw");
        let c = parse_secret("s", r#" {"password":"pw"}"#).expect("json without user");
        assert_eq!(c.username, None);
    }

    #[test]
    fn unusable_secrets_say_why_without_their_value() {
        for text in [
            "",
            r#"{"user":"svc","pass":"Hidden1"}"#,
            r#"{"password":""}"#,
            r#"{"password":"Hidden1""#,
        ] {
            let e = parse_secret("mq/svc", text).expect_err(text);
            let shown = e.to_string();
            assert!(shown.contains("mq/svc"), "{shown}");
            assert!(!shown.contains("Hidden1"), "{shown}");
        }
    }
}
