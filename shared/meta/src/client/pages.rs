//! A Page's subscription of the app to its `leadgen` webhooks:
//! `POST /{page}/subscribed_apps?subscribed_fields=leadgen` and
//! `DELETE /{page}/subscribed_apps`, both with the Page's own token.

use super::*;

/// Meta answers `{"success": true}`, or the string `"true"` in its own
/// samples: both are taken.
fn succeeded(json: &Value) -> bool {
    matches!(json.get("success"), Some(Value::Bool(true)))
        || json.get("success").and_then(Value::as_str) == Some("true")
}

impl GraphClient {
    /// Subscribes the app to the Page's `leadgen` field.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain; an answer without
    /// `success` is malformed.
    pub async fn subscribe_page(&self, page_token: &str, page_id: &str) -> Result<(), GraphError> {
        let url = self.url(
            &format!("{page_id}/subscribed_apps"),
            &[("subscribed_fields", "leadgen")],
        );
        let (json, _) = self.call(self.http().post(url), page_token).await?;
        if succeeded(&json) {
            Ok(())
        } else {
            Err(GraphError::malformed("subscription answer"))
        }
    }

    /// Removes the app's subscription from the Page.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn unsubscribe_page(
        &self,
        page_token: &str,
        page_id: &str,
    ) -> Result<(), GraphError> {
        let url = self.url(&format!("{page_id}/subscribed_apps"), &[]);
        let (json, _) = self.call(self.http().delete(url), page_token).await?;
        if succeeded(&json) {
            Ok(())
        } else {
            Err(GraphError::malformed("subscription answer"))
        }
    }
}
