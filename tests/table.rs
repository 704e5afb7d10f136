//! The stack's table as text, for the checks that a secret (a token, a
//! form lead's answers) is in no item.

use crate::Harness;

impl Harness {
    /// Every item of the stack's table, as text: what a secret must never
    /// be found in.
    pub async fn table_text(&self) -> String {
        let store = self.store();
        let mut text = String::new();
        let mut start = None;
        loop {
            let out = store
                .ddb
                .scan()
                .table_name(&store.names.table)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan the table");
            for item in out.items() {
                text.push_str(&format!("{item:?}\n"));
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return text;
            }
        }
    }
}
