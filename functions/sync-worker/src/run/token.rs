//! The Meta token a run reads with: opened from its sealed form with KMS
//! once per owner and token version, and kept in the warm process's memory
//! for [`KEEP_MS`], so that the runs of one owner's accounts (an agency's
//! hundreds, minutes apart) do not each pay a KMS request ($3 a million).

use std::collections::HashMap;

use adtrail_domain::outcome::{FailureKind, RunOutcome};
use adtrail_domain::pixels::ConnectionStatus;
use adtrail_store::connections::Connection;
use adtrail_store::seal::Purpose;

use crate::Worker;
use crate::stopped::failed;

/// How long an opened token is kept: a quarter of an hour, the shortest
/// sync interval.
pub const KEEP_MS: i64 = 15 * adtrail_domain::time::MINUTE_MS;
/// Owners whose tokens are kept at most: a bound on the memory, far above
/// what one worker sees in a quarter of an hour.
const MOST_KEPT: usize = 1_000;

/// The tokens the process opened, by owner and token version, with when:
/// kept in memory only, never logged (its `Debug` shows how many). A new
/// token has a new version, so it is opened anew; a connection marked
/// invalid is refused from its stored status, read on every run, before
/// this is looked at.
#[derive(Default)]
pub struct Tokens(tokio::sync::Mutex<HashMap<(String, String), (String, i64)>>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.try_lock().map(|m| m.len()).ok();
        f.debug_struct("Tokens").field("kept", &kept).finish()
    }
}

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
        let now = self.clock.now_ms();
        let mut opened = tokens.0.lock().await;
        if let Some((token, at)) = opened.get(&key)
            && now - at < KEEP_MS
            && now >= *at
        {
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
        if opened.len() >= MOST_KEPT {
            opened.retain(|_, (_, at)| now - *at < KEEP_MS && now >= *at);
            if opened.len() >= MOST_KEPT {
                opened.clear();
            }
        }
        opened.insert(key, (token.clone(), now));
        Ok(token)
    }
}
