//! The gateway's one entry, and the one place a request's way is chosen:
//! a request to a chat endpoint goes to the chat pipeline ([`super::chat`]:
//! admit → run → answer), any other to the router of the other routes
//! ([`super::router::router`]).

use std::sync::Arc;

use axum::extract::Request;
use axum::Router;

use super::chat;
use super::server::{Answer, Answering};
use super::Gateway;

/// Every request the gateway's server reads.
pub(super) struct Front {
    gateway: Arc<Gateway>,
    router: Router,
}

impl Front {
    /// The front of `gateway`.
    pub(super) fn new(gateway: Arc<Gateway>) -> Self {
        let router = super::router::router(gateway.clone());
        Front { gateway, router }
    }
}

impl Answer for Front {
    fn answer(&self, request: Request) -> Answering {
        match chat::endpoint(request.uri().path()) {
            Some(face) => chat::answer(&self.gateway, face, request),
            None => self.router.answer(request),
        }
    }
}
