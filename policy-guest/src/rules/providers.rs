//! Provider wording as data (F-5.6, F-12.9): one table per provider
//! family, each row a phrasing that means something else from that family
//! than from anyone else. A provider's new phrasing is a row here, not a
//! rule in code.
//!
//! A row matches a level when every one of its phrases is in the level's
//! text or one of its codes (ASCII case-insensitive; codes folded to
//! letters and digits), none of its `unless` words is, and the level's
//! status is one of its statuses (any when it names none). A row of the
//! first stage decides before every other rule; a fallback row only when
//! no other rule named a reason.

use policy_types::Reason;

use super::LevelFacts;
use crate::text::contains_ignore_case;

/// What a row asks of the level's text.
#[derive(Debug, Clone, Copy)]
pub enum Text {
    /// Every one of these phrases.
    Holds(&'static [&'static str]),
    /// No phrase the rules know, and no code: the text names no failure.
    NamesNoFailure,
}

/// When a row decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before every other rule.
    First,
    /// Only when no other rule named a reason.
    Fallback,
}

/// One phrasing of a provider family.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// What the text holds.
    pub text: Text,
    /// Words that veto the row.
    pub unless: &'static [&'static str],
    /// The statuses it applies under; empty: any, or none.
    pub statuses: &'static [u16],
    /// Only when no upstream's own body is nested inside the level (a
    /// wrapper's words say nothing when the upstream's body is there).
    pub alone: bool,
    pub stage: Stage,
    /// What it means: a reason, or no failure at all.
    pub reason: Option<Reason>,
}

/// How a table's provider ids are matched against the provider called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// The provider is one of them (ASCII case-insensitive).
    Exact(&'static [&'static str]),
    /// The provider's id contains one of them (`dashscope-intl`).
    Within(&'static [&'static str]),
}

/// One provider family's table.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The family, for people (and the tests that name it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub family: &'static str,
    pub ids: Ids,
    pub rows: &'static [Row],
}

/// A row of the first stage that decides a reason under any status.
const fn first(phrases: &'static [&'static str], reason: Reason) -> Row {
    Row {
        text: Text::Holds(phrases),
        unless: &[],
        statuses: &[],
        alone: false,
        stage: Stage::First,
        reason: Some(reason),
    }
}

/// Words that make a quota an amount owed, not a throttle.
const OWED: &[&str] = &["arrear", "overdue", "balance", "good standing"];

/// Words that name what is wrong with a credential.
const CREDENTIAL_FAULTS: &[&str] = &["invalid", "incorrect", "expired", "revoked", "key", "token"];

/// The tables, in the order they are read.
pub const TABLES: &[Table] = &[
    Table {
        // Alibaba words throttles as quota: a 429 or a throttling code that
        // speaks of a quota is a rate limit, never a billing disable; its
        // free tier spent under a 403, or arrears, stay billing.
        family: "Alibaba (DashScope, Bailian, Qwen)",
        ids: Ids::Within(&["dashscope", "bailian", "qwen", "alibaba", "aliyun"]),
        rows: &[
            Row {
                unless: OWED,
                statuses: &[429],
                ..first(&["quota"], Reason::RateLimit)
            },
            Row {
                unless: OWED,
                ..first(&["throttling", "quota"], Reason::RateLimit)
            },
            // Its arrears, also without the `Arrearage` code.
            first(&["account is in good standing"], Reason::Billing),
        ],
    },
    Table {
        family: "Amazon Bedrock",
        ids: Ids::Within(&["bedrock"]),
        rows: &[
            // A retired model, whatever the "Access denied." before it.
            first(&["marked by provider as legacy"], Reason::ModelNotFound),
        ],
    },
    Table {
        family: "xAI",
        ids: Ids::Exact(&["xai"]),
        rows: &[
            // A bare "Authentication required", naming no credential fault:
            // its gateway's transient refusal.
            Row {
                unless: CREDENTIAL_FAULTS,
                statuses: &[401],
                ..first(&["authentication required"], Reason::Timeout)
            },
            // A 403 whose text names no failure: a content refusal.
            Row {
                text: Text::NamesNoFailure,
                unless: &[],
                statuses: &[403],
                alone: false,
                stage: Stage::First,
                reason: None,
            },
        ],
    },
    Table {
        // Providers whose 429s carry real out-of-balance errors (from other
        // gateways the phrase comes with rate limits).
        family: "Moonshot, Kimi, xAI, Baichuan",
        ids: Ids::Within(&["moonshot", "kimi", "xai", "baichuan"]),
        rows: &[Row {
            statuses: &[429],
            ..first(&["insufficient account balance"], Reason::Billing)
        }],
    },
    Table {
        family: "OpenRouter",
        ids: Ids::Exact(&["openrouter"]),
        rows: &[
            // A key's own spending limit: billing, whatever the status.
            first(&["key limit exceeded"], Reason::Billing),
            first(&["key limit reached"], Reason::Billing),
            first(&["key limit hit"], Reason::Billing),
            first(&["key budget limit exceeded"], Reason::Billing),
            first(&["key budget limit reached"], Reason::Billing),
            first(&["key with a higher monthly limit"], Reason::Billing),
            // Its bare wrapper of an upstream's failure; with the upstream's
            // own body inside, that body is what is read.
            Row {
                alone: true,
                stage: Stage::Fallback,
                ..first(&["provider returned error"], Reason::Timeout)
            },
        ],
    },
];

/// The tables of `provider`, as a set of indexes into [`TABLES`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableSet(u8);

impl TableSet {
    /// The tables whose ids match `provider` (already trimmed).
    pub fn of(provider: &str) -> TableSet {
        let mut set = 0u8;
        for (index, table) in TABLES.iter().enumerate() {
            let matched = match table.ids {
                Ids::Exact(ids) => ids.iter().any(|id| provider.eq_ignore_ascii_case(id)),
                Ids::Within(ids) => ids.iter().any(|id| contains_ignore_case(provider, id)),
            };
            if matched {
                set |= 1 << index;
            }
        }
        TableSet(set)
    }

    /// Whether the set holds no table.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The families of the set's tables, in order.
    #[cfg(test)]
    pub fn families(self) -> Vec<&'static str> {
        self.tables().map(|table| table.family).collect()
    }

    fn tables(self) -> impl Iterator<Item = &'static Table> {
        (TABLES.iter().enumerate())
            .filter(move |(index, _)| self.0 & (1 << index) != 0)
            .map(|(_, table)| table)
    }
}

// The set is a byte: one bit per table.
const _: () = assert!(TABLES.len() <= 8);

/// What the first row of `stage` that matches the level says: `Some(None)`
/// for a row that says the level names no failure.
pub fn decide(facts: &LevelFacts, stage: Stage) -> Option<Option<Reason>> {
    let set = facts.provider.tables;
    if set.is_empty() {
        return None;
    }
    let rows = set.tables().flat_map(|table| table.rows.iter());
    rows.filter(|row| row.stage == stage)
        .find(|row| matches(row, facts))
        .map(|row| row.reason)
}

fn matches(row: &Row, facts: &LevelFacts) -> bool {
    if !row.statuses.is_empty() && !facts.status.is_some_and(|s| row.statuses.contains(&s)) {
        return false;
    }
    if row.alone && facts.upstream_body {
        return false;
    }
    let said = |word: &str| {
        contains_ignore_case(facts.message, word)
            || facts.codes.iter().any(|code| code.folded_contains(word))
    };
    let holds = match row.text {
        Text::Holds(phrases) => phrases.iter().all(|phrase| said(phrase)),
        Text::NamesNoFailure => {
            facts.codes.is_empty() && crate::signals::scan(super::page(facts)).is_empty()
        }
    };
    holds && !row.unless.iter().any(|word| said(word))
}
