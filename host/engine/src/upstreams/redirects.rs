//! Which redirects a provider call follows, and what one it did not follow
//! says.
//!
//! Only redirects within the endpoint's own origin (scheme, host and port)
//! are followed. The HTTP client's default follows any redirect and drops
//! only `Authorization` and cookies when the host changes, so an endpoint
//! that redirected elsewhere would be sent `x-api-key`, `api-key`,
//! `x-goog-api-key` and any configured header holding a secret; and an
//! `http://` base URL answered by a redirect to `https://` would have the
//! key dropped and come back as a 401 that puts a good key in cooldown.
//! Within one origin (a trailing slash, a moved path) following is safe and
//! keeps such endpoints working.

use reqwest::redirect::Policy;
use reqwest::Url;

/// Redirects followed within one origin before the last one is answered
/// instead: a trailing-slash or moved-path hop takes one or two, and a loop
/// ends quickly (the client's default allows 10).
pub(crate) const MAX_SAME_ORIGIN_REDIRECTS: usize = 5;

/// The redirect policy of provider calls: follows a redirect only to the
/// origin the call started at, at most [`MAX_SAME_ORIGIN_REDIRECTS`] times;
/// otherwise the redirect itself is the answer (see [`redirect_message`]).
pub(crate) fn same_origin_only() -> Policy {
    Policy::custom(|attempt| {
        let previous = attempt.previous();
        let follow = previous.len() <= MAX_SAME_ORIGIN_REDIRECTS
            && previous
                .first()
                .is_some_and(|first| same_origin(first, attempt.url()));
        if follow {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// Whether two URLs share scheme, host and port (the port a scheme implies
/// counts as given).
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The message of a redirect answer (status `status`, from the call to
/// `from`, `Location` `location`) that was not followed: where it points,
/// and what to do. The target is named by origin and path only; its query
/// and user information may carry a token and are left out.
pub(crate) fn redirect_message(status: u16, from: &Url, location: Option<&str>) -> String {
    let Some(target) = location.and_then(|location| from.join(location).ok()) else {
        return format!(
            "the endpoint answered {status} (a redirect) without a usable Location; \
             failover does not follow it"
        );
    };
    let shown = shown(&target);
    if same_origin(from, &target) {
        format!(
            "the endpoint answered {status}, a redirect to {shown}, after \
             {MAX_SAME_ORIGIN_REDIRECTS} redirects within its origin; failover follows no more"
        )
    } else {
        format!(
            "the endpoint answered {status}, a redirect to {shown}: another origin, not \
             followed (the credential is not sent there); set baseUrl to it if it is the \
             provider's"
        )
    }
}

/// `url` without user information, query or fragment.
fn shown(url: &Url) -> String {
    let mut shown = url.clone();
    // Only URLs that cannot have a host refuse these, and a redirect's
    // target joined to an http(s) URL always has one.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        let base = url("https://api.example.com/v1/chat/completions");
        assert!(same_origin(&base, &url("https://api.example.com/v2/other")));
        assert!(same_origin(&base, &url("https://api.example.com:443/v1/")));
        assert!(!same_origin(&base, &url("http://api.example.com/v1/")));
        assert!(!same_origin(
            &base,
            &url("https://api.example.com:8443/v1/")
        ));
        assert!(!same_origin(&base, &url("https://evil.example.com/v1/")));
        assert!(!same_origin(&base, &url("https://example.com/v1/")));
    }

    #[test]
    fn a_redirect_elsewhere_is_named_without_its_query() {
        let from = url("http://api.example.com/v1/chat/completions?key=AIzaSECRET");
        let message = redirect_message(
            301,
            &from,
            Some("https://user:pw@api.example.com/v1/chat/completions?sig=SECRET#frag"),
        );
        assert!(
            message.contains("301, a redirect to https://api.example.com/v1/chat/completions:"),
            "{message}"
        );
        assert!(message.contains("another origin"), "{message}");
        for hidden in ["SECRET", "user", "pw@", "frag"] {
            assert!(!message.contains(hidden), "{hidden} in {message}");
        }
    }

    #[test]
    fn a_relative_location_is_read_against_the_call() {
        let from = url("https://api.example.com/v1/chat/completions");
        let message = redirect_message(308, &from, Some("/v2/chat/completions"));
        assert!(
            message.contains("https://api.example.com/v2/chat/completions"),
            "{message}"
        );
        assert!(message.contains("within its origin"), "{message}");
    }

    #[test]
    fn a_redirect_without_a_location_says_so() {
        let from = url("https://api.example.com/v1/chat/completions");
        for location in [None, Some("http://[::1")] {
            let message = redirect_message(302, &from, location);
            assert!(message.contains("without a usable Location"), "{message}");
        }
    }
}
