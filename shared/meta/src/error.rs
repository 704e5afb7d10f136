//! A failed Graph call, classified once (by the domain's `classify`).

use adtrail_domain::graph_error::{GraphErrorKind, classify};

/// The longest message of Meta's that we keep.
const MAX_MESSAGE: usize = 200;

#[derive(Debug, thiserror::Error)]
#[error("Meta {kind:?} (code {code:?}): {message}")]
pub struct GraphError {
    pub kind: GraphErrorKind,
    pub status: u16,
    pub code: Option<i64>,
    pub subcode: Option<i64>,
    /// Meta's message, bounded, without control characters or the token.
    pub message: String,
    /// How long Meta says until access is regained.
    pub regain_ms: Option<i64>,
    /// The request left and no answer came back (a timeout, a dropped
    /// connection): Meta may have acted on it.
    pub maybe_received: bool,
    #[source]
    pub source: Option<reqwest::Error>,
}

impl GraphError {
    pub fn from_answer(
        status: u16,
        code: Option<i64>,
        subcode: Option<i64>,
        transient: bool,
        message: &str,
        token: &str,
    ) -> Self {
        Self {
            kind: classify(status, code, subcode, transient),
            status,
            code,
            subcode,
            message: scrub(message, token),
            regain_ms: None,
            maybe_received: false,
            source: None,
        }
    }

    /// A call that never got an answer (a timeout, a refused connection).
    pub fn transport(source: reqwest::Error) -> Self {
        Self {
            kind: GraphErrorKind::Transient,
            status: 0,
            code: None,
            subcode: None,
            message: if source.is_timeout() {
                "Meta did not answer in time".into()
            } else {
                "Meta could not be reached".into()
            },
            regain_ms: None,
            // Refused before it was sent: Meta saw nothing.
            maybe_received: !source.is_connect(),
            // Its Display would print the URL (`debug_token`'s carries a
            // token): the cause is kept without it.
            source: Some(source.without_url()),
        }
    }

    /// A call not made: the request's deadline left it no time. Meta saw
    /// nothing.
    pub fn out_of_time() -> Self {
        Self {
            kind: GraphErrorKind::Transient,
            status: 0,
            code: None,
            subcode: None,
            message: "no time was left to call Meta before the request's deadline".into(),
            regain_ms: None,
            maybe_received: false,
            source: None,
        }
    }

    /// An answer we cannot read.
    pub fn malformed(what: &str) -> Self {
        Self {
            kind: GraphErrorKind::Transient,
            status: 0,
            code: None,
            subcode: None,
            message: format!("Meta answered an unreadable {what}"),
            regain_ms: None,
            maybe_received: false,
            source: None,
        }
    }
}

/// Meta's message made safe to store and show: bounded, printable, and with
/// any copy of the token removed.
pub fn scrub(message: &str, token: &str) -> String {
    let mut text: String = message
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_MESSAGE)
        .collect();
    if token.len() >= 8 {
        text = text.replace(token, "[token]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_bounded_and_never_carry_the_token() {
        let token = "EAAB-secret-token-123";
        let m = scrub(&format!("bad token {token}\n{}", "x".repeat(500)), token);
        assert!(!m.contains(token));
        assert!(!m.contains('\n'));
        assert!(m.chars().count() <= 200);
    }
}
