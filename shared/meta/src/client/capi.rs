//! The Conversions API: `POST /{pixel}/events`.

use super::*;

impl GraphClient {
    /// `POST /{pixelId}/events`: sends up to 1,000 server events in one
    /// request (the Conversions API). Meta takes all of them or, for one
    /// invalid event, none: the caller isolates it. Answers how many Meta
    /// says it received.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain (an invalid event is code
    /// 100, kind [`GraphErrorKind::Other`]).
    pub async fn send_events(
        &self,
        token: &str,
        pixel_id: &str,
        events: &[ServerEvent],
        test_event_code: Option<&str>,
    ) -> Result<i64, GraphError> {
        let mut body = serde_json::json!({ "data": events });
        if let Some(code) = test_event_code {
            body["test_event_code"] = Value::String(code.to_owned());
        }
        let (json, _) = self
            .call(
                self.http()
                    .post(self.url(&format!("{pixel_id}/events"), &[]))
                    .json(&body),
                token,
            )
            .await?;
        count(&json, "events_received")
    }
}
