//! Meta connections: an owner's sealed token and the ad accounts it lists.
//!
//! The listing lives in the connection item (at most [`MAX_LISTED_ACCOUNTS`]
//! accounts, each field bounded), because a link is always checked against
//! it and one read is cheaper than a query.

use adtrail_domain::pixels::ConnectionStatus;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use crate::attr::{FromItem, Item, get_s, n, s};
use crate::items::{ConnectionItem, decode};
use crate::keys::{CONNECTION_SK, EXPIRY_PK, GSI1, GSI1_SK, expiry_sk, owner_pk, parse_expiry_sk};
use crate::write::applied;
use crate::{Connections, StoreError};

/// The most ad accounts one connection keeps in its listing.
pub const MAX_LISTED_ACCOUNTS: usize = 1_000;

/// An ad account as Meta lists it for a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedAccount {
    pub ad_account_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
}

/// A pixel an owner's token lists (through its ad accounts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedPixel {
    pub pixel_id: String,
    pub name: String,
}

/// How a stored token was authorized (see [`Connections::set_authorization`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authorization<'a> {
    /// `/me`'s id and name.
    pub by: Option<(&'a str, &'a str)>,
    pub at: i64,
    /// When the token expires (epoch ms): `None` when it never does, or for
    /// a pasted token, whose end is not asked.
    pub expires_at: Option<i64>,
    pub expiring_soon: bool,
    /// `TOKEN_EXCHANGE_FAILED: …` when the long-lived trade failed.
    pub last_error: Option<&'a str>,
}

/// The most pixels one connection keeps in its listing.
pub const MAX_LISTED_PIXELS: usize = 1_000;

/// Bytes the listings may take in the connection item, far below
/// DynamoDB's 400 KB for an item with its token and dates: the accounts'
/// and the pixels'.
pub const ACCOUNTS_LISTING_BYTES: usize = 260_000;
pub const PIXELS_LISTING_BYTES: usize = 100_000;

/// Shortens the names (display only, never a key) until the listing's JSON
/// fits `budget`: every id is kept, so every listed account can still be
/// linked. Answers the JSON.
fn fitted<T: Serialize + Clone>(
    items: &[T],
    budget: usize,
    name: impl Fn(&mut T) -> &mut String,
) -> Result<String, StoreError> {
    let mut items = items.to_vec();
    let mut cap = 400;
    loop {
        let json =
            serde_json::to_string(&items).map_err(|_| StoreError::Malformed("listing".into()))?;
        if json.len() <= budget || cap == 0 {
            return Ok(json);
        }
        cap /= 2;
        for item in &mut items {
            let n = name(item);
            if let Some((at, _)) = n.char_indices().nth(cap) {
                n.truncate(at);
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub owner_key: String,
    pub status: ConnectionStatus,
    pub sealed_token: Vec<u8>,
    /// Changes with every stored token: a run's failure condemns only the
    /// token it used.
    pub token_version: String,
    pub accounts: Vec<ListedAccount>,
    pub pixels: Vec<ListedPixel>,
    pub invalid_since: Option<i64>,
    pub last_error: Option<String>,
    pub link_count: i64,
    /// Who authorized the token (Meta's `/me`), and when it was connected.
    pub authorized_by: Option<(String, String)>,
    pub authorized_at: Option<i64>,
    /// When the token expires (epoch ms), if known, and whether that is
    /// under 7 days away (set at login, then by the sweeper).
    pub expires_at: Option<i64>,
    pub expiring_soon: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl FromItem for Connection {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<ConnectionItem>(item, "connection")?.try_into()
    }
}

impl Connection {
    pub fn listed(&self, account: &str) -> Option<&ListedAccount> {
        self.accounts.iter().find(|a| a.ad_account_id == account)
    }
}

impl Connections<'_> {
    /// Stores a newly validated token (sealed) and its listing, replacing
    /// the owner's previous token; the connection becomes active again.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_connection(
        &self,
        owner: &str,
        sealed_token: Vec<u8>,
        token_version: &str,
        accounts: &[ListedAccount],
        pixels: &[ListedPixel],
        now: i64,
    ) -> Result<Connection, StoreError> {
        let listing = fitted(
            &accounts[..accounts.len().min(MAX_LISTED_ACCOUNTS)],
            ACCOUNTS_LISTING_BYTES,
            |a| &mut a.name,
        )?;
        let pixel_listing = fitted(
            &pixels[..pixels.len().min(MAX_LISTED_PIXELS)],
            PIXELS_LISTING_BYTES,
            |p| &mut p.name,
        )?;
        let out = self.update_item(owner_pk(owner), CONNECTION_SK)
            .update_expression(
                "SET ownerKey = :owner, #status = :active, sealedToken = :token, tokenVersion = :version, \
                 accounts = :accounts, pixels = :pixels, updatedAt = :now, createdAt = if_not_exists(createdAt, :now), \
                 linkCount = if_not_exists(linkCount, :zero) REMOVE invalidSince, lastError",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":active", s(ConnectionStatus::Active.as_str()))
            .expression_attribute_values(":token", AttributeValue::B(Blob::new(sealed_token)))
            .expression_attribute_values(":version", s(token_version))
            .expression_attribute_values(":accounts", s(listing))
            .expression_attribute_values(":pixels", s(pixel_listing))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":zero", n(0))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Connection::from_item(&out.attributes.unwrap_or_default())
    }

    /// The owner's connection, if any.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_connection(&self, owner: &str) -> Result<Option<Connection>, StoreError> {
        self.get_connection_as(owner, true).await
    }

    /// The owner's connection, read strongly or, for half the units,
    /// eventually: the sync worker's read, which may see the token before
    /// the last second's change. A run with such a token that Meta refuses
    /// reads the connection again strongly before it pauses anything.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_connection_as(
        &self,
        owner: &str,
        consistent: bool,
    ) -> Result<Option<Connection>, StoreError> {
        let item = self
            .read_item_as(owner_pk(owner), CONNECTION_SK, consistent)
            .await?;
        item.as_ref().map(Connection::from_item).transpose()
    }

    /// Marks the connection's token dead, if `token_version` is still the
    /// stored one. Answers whether it was.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn mark_connection_invalid(
        &self,
        owner: &str,
        token_version: &str,
        last_error: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let res = self.update_item(owner_pk(owner), CONNECTION_SK)
            .condition_expression("tokenVersion = :version")
            .update_expression(
                "SET #status = :invalid, lastError = :err, updatedAt = :now, invalidSince = if_not_exists(invalidSince, :now)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":version", s(token_version))
            .expression_attribute_values(":invalid", s(ConnectionStatus::Invalid.as_str()))
            .expression_attribute_values(":err", s(last_error))
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }

    /// Stops everything a refused token fed, if `token_version` is still
    /// the stored one: the connection is marked invalid and each of its
    /// links paused (its pixels stop with it, read as the connection's
    /// status). Answers whether it stopped them; `false` means a new token
    /// was stored meanwhile and keeps working.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn stop_connection(
        &self,
        owner: &str,
        token_version: &str,
        last_error: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        if !self
            .mark_connection_invalid(owner, token_version, last_error, now)
            .await?
        {
            return Ok(false);
        }
        for (site, account) in self.links().owner_links(owner).await? {
            self.links().pause_link(&site, &account, last_error).await?;
        }
        Ok(true)
    }

    /// Records how the owner's token was authorized, after it is stored:
    /// who (`/me`), when, when it expires, and whether that is under 7
    /// days away. A token with a known end waits in the `owner` index under
    /// `expiry` until the sweeper flags it as expiring soon.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn set_authorization(
        &self,
        owner: &str,
        a: &Authorization<'_>,
    ) -> Result<(), StoreError> {
        let mut set = vec!["authorizedAt = :at", "expiringSoon = :soon"];
        let mut remove = vec![];
        let mut req = self
            .update_item(owner_pk(owner), CONNECTION_SK)
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":at", n(a.at))
            .expression_attribute_values(":soon", AttributeValue::Bool(a.expiring_soon));
        match a.by {
            Some((id, name)) => {
                set.push("authorizedById = :id, authorizedByName = :name");
                req = req
                    .expression_attribute_values(":id", s(id))
                    .expression_attribute_values(":name", s(name));
            }
            None => remove.push("authorizedById, authorizedByName"),
        }
        match a.expires_at {
            Some(at) => {
                set.push("expiresAt = :exp");
                req = req.expression_attribute_values(":exp", n(at));
                if a.expiring_soon {
                    remove.push("gsi1pk, gsi1sk");
                } else {
                    set.push("gsi1pk = :expiry, gsi1sk = :expsk");
                    req = req
                        .expression_attribute_values(":expiry", s(EXPIRY_PK))
                        .expression_attribute_values(":expsk", s(expiry_sk(at, owner)));
                }
            }
            None => remove.push("expiresAt, gsi1pk, gsi1sk"),
        }
        if let Some(e) = a.last_error {
            set.push("lastError = :err");
            req = req.expression_attribute_values(":err", s(e));
        }
        let mut expr = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expr.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        applied(req.update_expression(expr).send().await)?;
        Ok(())
    }

    /// Flags the tokens that end before `horizon` (epoch ms) as expiring
    /// soon, at most `max`, taking each out of the expiry index; a token
    /// stored since (another expiry) is left alone. Answers the owners
    /// flagged now, with when their token ends (each flagged once).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn flag_expiring(
        &self,
        horizon: i64,
        max: i32,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(GSI1)
            .key_condition_expression("gsi1pk = :pk AND gsi1sk < :h")
            .expression_attribute_values(":pk", s(EXPIRY_PK))
            .expression_attribute_values(":h", s(format!("{horizon:013}")))
            .limit(max)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        let mut flagged = vec![];
        for item in out.items() {
            // The index projects its keys only: the key says it all.
            let Some((exp, owner)) = get_s(item, GSI1_SK).and_then(parse_expiry_sk) else {
                continue;
            };
            let res = self
                .update_item(owner_pk(owner), CONNECTION_SK)
                .update_expression("SET expiringSoon = :t REMOVE gsi1pk, gsi1sk")
                .condition_expression("expiresAt = :exp")
                .expression_attribute_values(":t", AttributeValue::Bool(true))
                .expression_attribute_values(":exp", n(exp))
                .send()
                .await;
            if applied(res)?.is_some() {
                flagged.push((owner.to_owned(), exp));
            }
        }
        Ok(flagged)
    }

    /// Forgets the owner's connection item. Answers whether there was one.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn delete_connection(&self, owner: &str) -> Result<bool, StoreError> {
        self.delete_existing(owner_pk(owner), CONNECTION_SK).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_of_long_names_fits_the_item_and_keeps_every_id() {
        // 1,000 accounts named with 400 four-byte characters: 1.6 MB raw.
        let accounts: Vec<ListedAccount> = (0..MAX_LISTED_ACCOUNTS)
            .map(|i| ListedAccount {
                ad_account_id: format!("act_{:012}", i),
                name: "\u{1F4B0}".repeat(400),
                currency: "BRL".into(),
                timezone: "America/Sao_Paulo".into(),
            })
            .collect();
        let json = fitted(&accounts, ACCOUNTS_LISTING_BYTES, |a| &mut a.name).unwrap();
        assert!(json.len() <= ACCOUNTS_LISTING_BYTES, "{}", json.len());
        let back: Vec<ListedAccount> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.len(), MAX_LISTED_ACCOUNTS);
        assert!(
            back.iter().all(|a| !a.name.is_empty()),
            "names shortened, not dropped"
        );
        // A listing that fits is kept as Meta gave it.
        let small = &accounts[..3];
        let json = fitted(small, ACCOUNTS_LISTING_BYTES, |a| &mut a.name).unwrap();
        assert_eq!(
            serde_json::from_str::<Vec<ListedAccount>>(&json).unwrap(),
            small
        );
    }
}
