//! What a token reaches: `/me`, its ad accounts and their pixels, and its
//! user's Pages with their tokens.

use super::*;

impl GraphClient {
    /// `GET /me`: who the token belongs to.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn me(&self, token: &str) -> Result<Me, GraphError> {
        let (json, _) = self
            .get(self.url("me", &[("fields", "id,name")]), token)
            .await?;
        Ok(Me {
            id: meta_id(&json, "id").ok_or_else(|| GraphError::malformed("user"))?,
            name: text(&json, "name").unwrap_or_default(),
        })
    }

    /// `GET /me/adaccounts`, every page (at most 1,000 accounts).
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn ad_accounts(&self, token: &str) -> Result<Vec<AdAccount>, GraphError> {
        let limit = ACCOUNTS_PAGE_SIZE.to_string();
        let mut url = self.url(
            "me/adaccounts",
            &[
                ("fields", "id,name,currency,timezone_name"),
                ("limit", &limit),
            ],
        );
        let mut accounts = vec![];
        loop {
            let (json, _) = self.get(url, token).await?;
            let page: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("account list"))?;
            for v in &page.data {
                let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
                let valid_id = adtrail_domain::AdAccountId::parse("id", id).is_ok();
                let currency = text(v, "currency").filter(|c| Currency::parse(c).is_ok());
                let timezone = text(v, "timezone_name")
                    .filter(|t| adtrail_domain::Timezone::parse(t).is_some());
                // An account we cannot file spend for is left out.
                if let (true, Some(currency), Some(timezone)) = (valid_id, currency, timezone) {
                    accounts.push(AdAccount {
                        id: id.to_owned(),
                        name: text(v, "name").unwrap_or_default(),
                        currency,
                        timezone,
                    });
                }
            }
            match page.paging.and_then(|p| p.next) {
                Some(next) if accounts.len() < MAX_ACCOUNTS => url = self.next_url(&next)?,
                _ => break,
            }
        }
        accounts.truncate(MAX_ACCOUNTS);
        Ok(accounts)
    }

    /// `GET /act_…/adspixels`: the pixels an ad account owns (at most
    /// five pages).
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn ad_pixels(&self, token: &str, account: &str) -> Result<Vec<Pixel>, GraphError> {
        let mut url = self.url(
            &format!("{account}/adspixels"),
            &[("fields", "id,name"), ("limit", "100")],
        );
        let mut pixels = vec![];
        for _ in 0..MAX_PIXEL_PAGES {
            let (json, _) = self.get(url.clone(), token).await?;
            let page: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("pixel list"))?;
            pixels.extend(page.data.iter().filter_map(|v| {
                Some(Pixel {
                    id: meta_id(v, "id")?,
                    name: text(v, "name").unwrap_or_default(),
                })
            }));
            match page.paging.and_then(|p| p.next) {
                Some(next) => url = self.next_url(&next)?,
                None => break,
            }
        }
        Ok(pixels)
    }

    /// `GET /{pixelId}`: whether the token reaches the pixel, and its name.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain (Meta answers code 100 for a
    /// pixel the token does not reach).
    pub async fn pixel(&self, token: &str, pixel_id: &str) -> Result<Pixel, GraphError> {
        let (json, _) = self
            .get(self.url(pixel_id, &[("fields", "id,name")]), token)
            .await?;
        Ok(Pixel {
            id: meta_id(&json, "id").ok_or_else(|| GraphError::malformed("pixel"))?,
            name: text(&json, "name").unwrap_or_default(),
        })
    }

    /// `GET /me/accounts`: the Pages the user has a role on, with the
    /// tasks the user may do and each Page's own token, every page of the
    /// listing (at most 1,000 Pages). A Page without a valid id is left
    /// out; names and tasks are bounded.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn pages(&self, token: &str) -> Result<Vec<Page>, GraphError> {
        let limit = ACCOUNTS_PAGE_SIZE.to_string();
        let mut url = self.url(
            "me/accounts",
            &[("fields", "id,name,tasks,access_token"), ("limit", &limit)],
        );
        let mut pages = vec![];
        loop {
            let (json, _) = self.get(url, token).await?;
            let listed: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("page list"))?;
            pages.extend(listed.data.iter().filter_map(|v| {
                let tasks = v
                    .get("tasks")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .filter(|t| {
                                t.len() <= 32
                                    && t.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
                            })
                            .take(20)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                Some(Page {
                    id: meta_id(v, "id")?,
                    name: text(v, "name").unwrap_or_default(),
                    tasks,
                    access_token: text(v, "access_token")
                        .filter(|t| t.len() <= 1024 && t.bytes().all(|b| b.is_ascii_graphic())),
                })
            }));
            match listed.paging.and_then(|p| p.next) {
                Some(next) if pages.len() < MAX_ACCOUNTS => url = self.next_url(&next)?,
                _ => break,
            }
        }
        pages.truncate(MAX_ACCOUNTS);
        Ok(pages)
    }
}
