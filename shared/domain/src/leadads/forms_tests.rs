//! The rules table: first match wins, entry otherwise; choices keep option
//! keys only; rules checked against the form and the board.

use super::*;
use crate::board::Column;

fn form() -> LeadForm {
    let option = |k: &str, v: &str| QuestionOption {
        key: k.into(),
        value: v.into(),
    };
    LeadForm {
        page_id: "1".into(),
        form_id: "2".into(),
        name: "Orçamento".into(),
        status: "ACTIVE".into(),
        questions: vec![
            Question {
                key: "full_name".into(),
                label: "Nome".into(),
                kind: "FULL_NAME".into(),
                options: vec![],
            },
            Question {
                key: "interesse".into(),
                label: "O que procura?".into(),
                kind: "CUSTOM".into(),
                options: vec![
                    option("comprar", "Quero comprar"),
                    option("orcamento", "Só um orçamento"),
                    option("curioso", "Só olhando"),
                ],
            },
        ],
        synced_at: 0,
    }
}

fn board() -> Board {
    Board {
        columns: Some(
            ["novo", "quente"]
                .map(|k| Column {
                    key: k.into(),
                    name: k.into(),
                    group: None,
                    color: None,
                })
                .to_vec(),
        ),
        ..Board::default()
    }
}

fn rules() -> FormRules {
    FormRules {
        first_contact: None,
        whatsapp_button_confirmed: false,
        entry_column: Some("novo".into()),
        rules: vec![
            FormRule {
                question_key: "interesse".into(),
                answers: vec!["curioso".into()],
                to: RuleTarget::Discard("curious".into()),
            },
            FormRule {
                question_key: "interesse".into(),
                answers: vec!["comprar".into(), "curioso".into()],
                to: RuleTarget::Column("quente".into()),
            },
        ],
    }
}

fn chose(keys: &[&str]) -> Choices {
    [(
        "interesse".to_owned(),
        keys.iter().map(|k| (*k).to_owned()).collect(),
    )]
    .into()
}

#[test]
fn choices_keep_option_keys_and_never_free_text() {
    let answers = vec![
        ("full_name".to_owned(), vec!["Maria Sigilosa".to_owned()]),
        (
            "interesse".to_owned(),
            vec![
                "Quero comprar".to_owned(),
                "curioso".to_owned(),
                "???".to_owned(),
            ],
        ),
        ("unknown".to_owned(), vec!["x".to_owned()]),
    ];
    let got = choices(&form().questions, &answers);
    assert_eq!(got, chose(&["comprar", "curioso"]));
    assert!(!format!("{got:?}").contains("Maria"));
}

#[test]
fn the_first_matching_rule_wins_and_no_match_enters() {
    let r = rules();
    let table = [
        (
            chose(&["curioso"]),
            FormDecision::Discard {
                reason: "curious".into(),
                rule: 0,
            },
        ),
        (
            chose(&["comprar"]),
            FormDecision::Column {
                column: Some("quente".into()),
                rule: Some(1),
            },
        ),
        (
            chose(&["comprar", "curioso"]),
            FormDecision::Discard {
                reason: "curious".into(),
                rule: 0,
            },
        ),
        (
            chose(&["orcamento"]),
            FormDecision::Column {
                column: Some("novo".into()),
                rule: None,
            },
        ),
        (
            Choices::new(),
            FormDecision::Column {
                column: Some("novo".into()),
                rule: None,
            },
        ),
    ];
    for (chosen, want) in table {
        assert_eq!(decide_form_lead(&r, &chosen), want, "{chosen:?}");
    }
    assert_eq!(
        decide_form_lead(&FormRules::default(), &chose(&["comprar"])),
        FormDecision::Column {
            column: None,
            rule: None
        }
    );
}

#[test]
fn rules_name_the_field_that_breaks_them() {
    let (f, b) = (form(), board());
    assert_eq!(check_rules(&rules(), &f, &b), Ok(()));
    let broken = |edit: fn(&mut FormRules)| {
        let mut r = rules();
        edit(&mut r);
        check_rules(&r, &f, &b).unwrap_err()
    };
    assert!(broken(|r| r.entry_column = Some("x".into())).starts_with("entryColumn"));
    assert!(
        broken(|r| r.rules[0].question_key = "full_name".into())
            .starts_with("rules[0].questionKey")
    );
    assert!(
        broken(|r| r.rules[1].answers.push("talvez".into())).starts_with("rules[1].answers[2]")
    );
    assert!(broken(|r| r.rules[1].answers.clear()).starts_with("rules[1].answers"));
    assert!(
        broken(|r| r.rules[1].to = RuleTarget::Column("x".into()))
            .starts_with("rules[1].to.column")
    );
    assert!(
        broken(|r| r.rules[0].to = RuleTarget::Discard("no way!".into()))
            .starts_with("rules[0].to.discard")
    );
}

#[test]
fn a_tally_decides_each_past_lead_again() {
    let past = [
        chose(&["curioso"]),
        chose(&["comprar"]),
        chose(&["comprar"]),
        chose(&["orcamento"]),
    ];
    let t = tally(&rules(), &past);
    assert_eq!(t.total, 4);
    assert_eq!(t.entry, 1);
    assert_eq!(t.rules, vec![1, 2]);
    assert_eq!(
        t.columns,
        [("quente".to_owned(), 2), ("novo".to_owned(), 1)].into()
    );
    assert_eq!(t.discarded, [("curious".to_owned(), 1)].into());
}

#[test]
fn a_first_contact_is_checked_field_by_field() {
    let (f, b) = (form(), board());
    let with = |c: FirstContact| {
        let r = FormRules {
            first_contact: Some(c),
            ..rules()
        };
        check_rules(&r, &f, &b)
    };
    let ok = FirstContact {
        mode: ContactMode::Automatic,
        text: Some("Oi! Vi seu interesse.\nPosso ajudar?".into()),
        brakes: Some(Brakes {
            business_hours_only: true,
            max_per_hour: 20,
            wait_minutes: 5,
        }),
    };
    assert_eq!(with(ok.clone()), Ok(()));
    assert!(
        with(FirstContact {
            text: None,
            ..ok.clone()
        })
        .unwrap_err()
        .starts_with("firstContact.text")
    );
    assert!(
        with(FirstContact {
            mode: ContactMode::LeadStarts,
            text: None,
            brakes: None
        })
        .is_ok()
    );
    assert!(
        with(FirstContact {
            text: Some("x".repeat(1_001)),
            ..ok.clone()
        })
        .is_err()
    );
    let mut fast = ok;
    fast.brakes = Some(Brakes {
        business_hours_only: false,
        max_per_hour: 0,
        wait_minutes: 0,
    });
    assert!(
        with(fast)
            .unwrap_err()
            .starts_with("firstContact.brakes.maxPerHour")
    );
    assert_eq!(ContactMode::parse("one_click"), Some(ContactMode::OneClick));
    assert_eq!(ContactMode::OneClick.as_str(), "one_click");
}
