//! Which route a request takes, from its path: `MESSAGES_PATH`,
//! `HEALTH_PATH`, or the path of a `ROUTES` path route
//! (`{"path": "/queues/{name}/messages"}`), which names the queue.
//!
//! The path is the event's raw path, with a trailing slash ignored, tried
//! as it came and without a leading stage name (HTTP APIs with a named
//! stage). The one that matched is the `path` the routing rules read.
//!
//! A path with a path route's shape whose name is no target of the
//! document is [`Route::UnknownQueue`], answered `404` before the body is
//! read, whatever `unmatched` and later routes say: a mistyped queue name
//! never lands in another queue.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use sqs_forwarder::Routes;

use crate::settings::{self, Settings};

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `MESSAGES_PATH`.
    Messages,
    /// A path route's path naming one of the document's targets.
    Queue,
    /// A path route's shape, naming no target of the document.
    UnknownQueue,
    /// `HEALTH_PATH`.
    Health,
    /// Anything else.
    NotFound,
}

impl Route {
    /// Whether it takes messages by `POST`.
    pub fn takes_messages(self) -> bool {
        matches!(self, Route::Messages | Route::Queue)
    }
}

/// A request's route, with the path that matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The route.
    pub route: Route,
    /// The path as matched (the raw path when nothing matched).
    pub path: String,
    /// For [`Route::UnknownQueue`], the name the path gave.
    pub name: Option<String>,
}

/// The request's path as the API saw it: the event's raw path, then (when
/// the API put a named stage in front, as HTTP APIs do) without the stage.
fn paths(request: &Request) -> Vec<String> {
    let raw = match request.raw_http_path() {
        "" => request.uri().path(),
        p => p,
    };
    let raw = settings::normalize_path(raw).to_owned();
    let stage = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(c)) => c.stage.clone(),
        Some(RequestContext::ApiGatewayV2(c)) => c.stage.clone(),
        _ => None,
    };
    let stripped = stage
        .filter(|s| s != "$default")
        .and_then(|s| raw.strip_prefix(&format!("/{s}")).map(str::to_owned))
        .filter(|p| p.is_empty() || p.starts_with('/'))
        .map(|p| settings::normalize_path(&p).to_owned());
    std::iter::once(raw).chain(stripped).collect()
}

/// Which route `request` takes.
pub fn resolve(request: &Request, settings: &Settings, routes: Option<&Routes>) -> Resolved {
    let paths = paths(request);
    let found = |route: Route, path: &String| Resolved {
        route,
        path: path.clone(),
        name: None,
    };
    if let Some(p) = paths.iter().find(|p| **p == settings.messages_path) {
        return found(Route::Messages, p);
    }
    if let Some(p) = paths.iter().find(|p| **p == settings.health_path) {
        return found(Route::Health, p);
    }
    if let Some(routes) = routes {
        let matched: Vec<_> = paths
            .iter()
            .filter_map(|p| routes.path_target(p).map(|(name, t)| (p, name, t)))
            .collect();
        if let Some((p, _, _)) = matched.iter().find(|(_, _, t)| t.is_some()) {
            return found(Route::Queue, p);
        }
        if let Some((p, name, _)) = matched.first() {
            return Resolved {
                name: Some((*name).to_owned()),
                ..found(Route::UnknownQueue, p)
            };
        }
    }
    let raw = paths.into_iter().next().unwrap_or_default();
    Resolved {
        route: Route::NotFound,
        path: raw,
        name: None,
    }
}

/// How a 404 names a name the path gave: at most 64 characters (a
/// target's name is never longer).
pub fn shown_name(name: &str) -> String {
    match name.char_indices().nth(64) {
        Some((at, _)) => format!("{}...", &name[..at]),
        None => name.to_owned(),
    }
}
