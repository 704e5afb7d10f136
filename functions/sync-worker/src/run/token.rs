//! The Meta token a run reads with: opened from its sealed form with KMS
//! once per owner and token version in a batch, and kept in memory for
//! that batch only.

use std::collections::HashMap;

use adtrail_domain::outcome::{FailureKind, RunOutcome};
use adtrail_domain::pixels::ConnectionStatus;
use adtrail_store::connections::Connection;
use adtrail_store::seal::Purpose;

use crate::Worker;
use crate::stopped::failed;

/// The tokens one batch opened, by owner and token version: the runs of
/// one owner's accounts in a batch open its token once (a KMS request each,
/// otherwise). Kept for the batch only, in memory, never logged; a new
/// token has a new version, so it is opened anew.
#[derive(Default)]
pub struct Tokens(tokio::sync::Mutex<HashMap<(String, String), String>>);

impl Worker {
    /// The connection's token, or the outcome of a run that cannot have it:
    /// a token marked invalid, or KMS refusing to open it.
    pub(super) async fn open_token(
        &self,
        connection: Option<&Connection>,
        tokens: &Tokens,
    ) -> Result<String, RunOutcome> {
        let Some(connection) = connection.filter(|c| c.status == ConnectionStatus::Active) else {
            return Err(failed(
                FailureKind::Token,
                "the connection's token was marked invalid",
            ));
        };
        let key = (
            connection.owner_key.clone(),
            connection.token_version.clone(),
        );
        let mut opened = tokens.0.lock().await;
        if let Some(token) = opened.get(&key) {
            return Ok(token.clone());
        }
        let token = self
            .store
            .sealer()
            .unseal(
                &connection.owner_key,
                Purpose::MetaConnection,
                &connection.sealed_token,
            )
            .await
            .map_err(|_| {
                failed(
                    FailureKind::SealingKey,
                    "KMS could not open the connection's token",
                )
            })?;
        opened.insert(key, token.clone());
        Ok(token)
    }
}
