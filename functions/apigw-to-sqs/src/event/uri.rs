//! The request URI as `lambda_http` forms it (`build_request_uri` and the
//! steps before it, for each kind of event), formed here without panicking:
//! what cannot form one is refused, or its host left out, before
//! `lambda_http` sees the event (see [`crate::event`]).

use lambda_http::aws_lambda_events::query_map::QueryMap;
use lambda_http::request::LambdaRequest;

use crate::reject::Rejection;

/// Why the request URI cannot be formed, if it cannot: the steps of
/// `lambda_http`'s `into_api_gateway_v2_request`/`into_proxy_request`/
/// `into_alb_request` and `build_request_uri`, each of which it `unwrap`s
/// or `expect`s.
pub fn unbuildable_uri(event: &LambdaRequest) -> Option<Rejection> {
    let (headers, domain, stage, path, query) = match event {
        LambdaRequest::ApiGatewayV1(r) => {
            let mv = &r.multi_value_query_string_parameters;
            let sv = &r.query_string_parameters;
            let query = if !mv.is_empty() {
                mv.to_query_string()
            } else {
                sv.to_query_string()
            };
            (
                &r.headers,
                r.request_context.domain_name.as_deref(),
                &r.request_context.stage,
                r.path.as_deref().unwrap_or_default(),
                query,
            )
        }
        LambdaRequest::ApiGatewayV2(r) => (
            &r.headers,
            r.request_context.domain_name.as_deref(),
            &r.request_context.stage,
            r.raw_path.as_deref().unwrap_or_default(),
            r.raw_query_string.clone().unwrap_or_default(),
        ),
        // No domain name and no stage; the query string decoded first.
        LambdaRequest::Alb(r) => {
            let mv = decoded_query(&r.multi_value_query_string_parameters);
            let query = if !mv.is_empty() {
                mv.to_query_string()
            } else {
                decoded_query(&r.query_string_parameters).to_query_string()
            };
            (
                &r.headers,
                None,
                &None,
                r.path.as_deref().unwrap_or_default(),
                query,
            )
        }
        _ => return None,
    };
    let bad = |what: String| Some(Rejection::bad_request("InvalidRequest", what));
    let host = headers
        .get(lambda_http::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(domain);
    let path = path_with_stage(stage.as_deref(), path);
    let mut uri = match host {
        None => match url::Url::parse(&format!("http://localhost{path}")) {
            Ok(u) => u.path().to_owned(),
            Err(e) => return bad(format!("the path cannot form a URI: {e}")),
        },
        Some(host) => {
            let scheme = headers
                .get("x-forwarded-proto")
                .and_then(|h| h.to_str().ok())
                .unwrap_or("https");
            match url::Url::parse(&format!("{scheme}://{host}{path}")) {
                Ok(u) => u.to_string(),
                Err(e) => {
                    return bad(format!(
                        "the Host header (or domain name), X-Forwarded-Proto and path cannot form a URI: {e}"
                    ));
                }
            }
        }
    };
    if !query.is_empty() {
        uri.push('?');
        uri.push_str(&query);
    }
    match lambda_http::http::Uri::try_from(uri.as_str()) {
        Ok(_) => None,
        Err(e) => bad(format!(
            "the request URI cannot be formed from the host, path and query string: {e}"
        )),
    }
}

/// A load balancer's query parameters as `lambda_http` decodes them
/// (`decode_query_map`): the load balancer sends them as the client wrote
/// them, percent-encoded.
fn decoded_query(map: &QueryMap) -> QueryMap {
    let query = map.to_query_string();
    let decoded = percent_encoding::percent_decode(query.as_bytes()).decode_utf8_lossy();
    decoded.parse().unwrap_or_default()
}

/// Leave the host out of the URI `lambda_http` forms: the `Host` header of
/// the single-value headers (a REST API or load balancer event keeps it in
/// its multi-value headers, which become the request's) and the domain
/// name. An HTTP API or function URL event, or a load balancer's without
/// multi-value headers, has single-value headers only: its request then has
/// no `Host` header (the function uses none, unless `ATTRIBUTE_HEADERS`
/// names it).
pub fn leave_out_host(event: &mut LambdaRequest) {
    match event {
        LambdaRequest::ApiGatewayV1(r) => {
            r.headers.remove(lambda_http::http::header::HOST);
            r.request_context.domain_name = None;
        }
        LambdaRequest::ApiGatewayV2(r) => {
            r.headers.remove(lambda_http::http::header::HOST);
            r.request_context.domain_name = None;
        }
        LambdaRequest::Alb(r) => {
            r.headers.remove(lambda_http::http::header::HOST);
        }
        _ => {}
    }
}

/// `lambda_http`'s `apigw_path_with_stage`: the stage in front of the path,
/// unless it is `$default`, already there, or
/// `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set.
fn path_with_stage(stage: Option<&str>, path: &str) -> String {
    if std::env::var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH").is_ok() {
        return path.to_owned();
    }
    match stage {
        None | Some("$default") => path.to_owned(),
        Some(stage) if path.starts_with(&format!("/{stage}/")) => path.to_owned(),
        Some(stage) => format!("/{stage}{path}"),
    }
}
