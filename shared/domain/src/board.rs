//! A site's board (the host's columns, in order) and its event map (which
//! Meta event each column sends): how a board is checked, and what a
//! redeclared board keeps of its map.

use std::collections::BTreeMap;

use crate::capi::EventName;
use crate::ids::check_opaque;

/// The most columns a board has.
pub const MAX_COLUMNS: usize = 40;
const MAX_COLUMN_TEXT: usize = 100;

/// A column of the host's board.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Column {
    pub key: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// Why a board cannot be declared; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    #[error("{0}")]
    Invalid(String),
    #[error("columns: at most {MAX_COLUMNS} columns")]
    TooMany,
}

fn check_text(field: &str, value: &str) -> Result<(), BoardError> {
    crate::ids::check_plain_text(value, MAX_COLUMN_TEXT)
        .map_err(|why| BoardError::Invalid(format!("{field}: {why}")))
}

/// Checks a declared board: at most 40 columns, unique keys, names, and
/// `#rgb`/`#rrggbb` colours.
pub fn check_board(columns: &[Column]) -> Result<(), BoardError> {
    if columns.len() > MAX_COLUMNS {
        return Err(BoardError::TooMany);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, c) in columns.iter().enumerate() {
        check_opaque(&format!("columns[{i}].key"), &c.key)
            .map_err(|e| BoardError::Invalid(e.to_string()))?;
        if !seen.insert(c.key.as_str()) {
            return Err(BoardError::Invalid(format!(
                "columns[{i}].key: declared twice"
            )));
        }
        check_text(&format!("columns[{i}].name"), &c.name)?;
        if let Some(g) = &c.group {
            check_text(&format!("columns[{i}].group"), g)?;
        }
        if let Some(color) = &c.color {
            let hex = color.strip_prefix('#').unwrap_or("");
            if !matches!(hex.len(), 3 | 6) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(BoardError::Invalid(format!(
                    "columns[{i}].color: must be #rgb or #rrggbb"
                )));
            }
        }
    }
    Ok(())
}

/// The event map after the board is declared again: a column that is gone
/// leaves it, one that stays keeps its event.
pub fn keep_mapped(
    map: &BTreeMap<String, EventName>,
    columns: &[Column],
) -> BTreeMap<String, EventName> {
    map.iter()
        .filter(|(k, _)| columns.iter().any(|c| &c.key == *k))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The board and its map, as a site has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Board {
    /// `None` until the host declares its columns.
    pub columns: Option<Vec<Column>>,
    pub map: BTreeMap<String, EventName>,
    pub send_lead_event: bool,
    /// 0 when never written.
    pub version: i64,
}

impl Board {
    /// The event a declared column sends.
    pub fn event_of(&self, column: &str) -> Option<EventName> {
        self.map.get(column).copied()
    }

    /// Whether the board declares `column`.
    pub fn declares(&self, column: &str) -> bool {
        self.columns
            .as_ref()
            .is_some_and(|cols| cols.iter().any(|c| c.key == column))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(key: &str) -> Column {
        Column {
            key: key.into(),
            name: key.to_uppercase(),
            group: None,
            color: None,
        }
    }

    #[test]
    fn boards_are_checked_and_a_redeclared_board_keeps_what_stays() {
        assert!(check_board(&[col("novo"), col("agendado")]).is_ok());
        let many: Vec<Column> = (0..41).map(|i| col(&format!("c{i}"))).collect();
        assert_eq!(check_board(&many), Err(BoardError::TooMany));
        assert!(check_board(&many[..40]).is_ok());
        assert!(check_board(&[col("a"), col("a")]).is_err());
        let mut bad = col("a");
        bad.name = "Novo\u{200B}".into();
        assert!(check_board(&[bad]).is_err());
        let mut colored = col("a");
        colored.color = Some("#f97316".into());
        assert!(check_board(std::slice::from_ref(&colored)).is_ok());
        colored.color = Some("orange".into());
        assert!(check_board(&[colored]).is_err());
        let map: BTreeMap<_, _> = [
            ("novo".to_owned(), EventName::Lead),
            ("agendado".to_owned(), EventName::Schedule),
        ]
        .into();
        let kept = keep_mapped(&map, &[col("agendado"), col("fechado")]);
        assert_eq!(kept, [("agendado".to_owned(), EventName::Schedule)].into());
    }
}
