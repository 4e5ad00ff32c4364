//! Symbolic error codes: Node errno names, SDK error types, gRPC statuses,
//! AWS exception names.
//!
//! Codes are compared after folding case and dropping everything but letters
//! and digits, so `RATE_LIMIT_EXCEEDED`, `rate_limit_error` and
//! `RateLimitError` all read as `ratelimit…`.

use policy_types::Reason;

/// How much a code says on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Names the failure: beats the message text (spec F-5.10 order).
    Specific,
    /// A catch-all such as `invalid_request_error` or `INVALID_ARGUMENT`,
    /// which providers also use for credit and key problems: the message
    /// text is read first and the code only decides when the text is silent.
    Generic,
}

/// Longest code worth folding; longer strings are not codes.
const MAX_CODE_LEN: usize = 64;

/// Codes matched by prefix, after folding.
const PREFIXES: &[(&str, Reason, Weight)] = &[
    ("ratelimit", Reason::RateLimit, Weight::Specific),
    ("throttl", Reason::RateLimit, Weight::Specific),
    ("toomanyrequests", Reason::RateLimit, Weight::Specific),
    ("overloaded", Reason::Overloaded, Weight::Specific),
    ("modelnotready", Reason::Overloaded, Weight::Specific),
    ("timeout", Reason::Timeout, Weight::Specific),
    ("serveroverloaded", Reason::Overloaded, Weight::Specific),
    ("engineoverloaded", Reason::Overloaded, Weight::Specific),
    ("invalidendpoint", Reason::ModelNotFound, Weight::Specific),
    ("rpmratelimit", Reason::RateLimit, Weight::Specific),
    ("tpmratelimit", Reason::RateLimit, Weight::Specific),
    ("insufficientbalance", Reason::Billing, Weight::Specific),
    // undici's UND_ERR_SOCKET, UND_ERR_HEADERS_TIMEOUT, UND_ERR_CLOSED, ...
    // (UND_ERR_ABORTED is an abort, listed exactly below).
    ("underr", Reason::Timeout, Weight::Specific),
];

/// Codes matched exactly, after folding.
const EXACT: &[(&str, Option<Reason>, Weight)] = &[
    // An abort is not a failure to classify (F-7.5).
    ("underraborted", None, Weight::Specific),
    ("aborterr", None, Weight::Specific),
    (
        "resourceexhausted",
        Some(Reason::RateLimit),
        Weight::Specific,
    ),
    (
        "servicequotaexceededexception",
        Some(Reason::RateLimit),
        Weight::Specific,
    ),
    ("quotaexceeded", Some(Reason::RateLimit), Weight::Specific),
    ("etimedout", Some(Reason::Timeout), Weight::Specific),
    ("esockettimedout", Some(Reason::Timeout), Weight::Specific),
    ("econnreset", Some(Reason::Timeout), Weight::Specific),
    ("econnrefused", Some(Reason::Timeout), Weight::Specific),
    ("econnaborted", Some(Reason::Timeout), Weight::Specific),
    ("epipe", Some(Reason::Timeout), Weight::Specific),
    ("enotfound", Some(Reason::Timeout), Weight::Specific),
    ("eaiagain", Some(Reason::Timeout), Weight::Specific),
    ("enetunreach", Some(Reason::Timeout), Weight::Specific),
    ("enetdown", Some(Reason::Timeout), Weight::Specific),
    ("enetreset", Some(Reason::Timeout), Weight::Specific),
    ("ehostunreach", Some(Reason::Timeout), Weight::Specific),
    ("ehostdown", Some(Reason::Timeout), Weight::Specific),
    ("requesttimeout", Some(Reason::Timeout), Weight::Specific),
    ("gatewaytimeout", Some(Reason::Timeout), Weight::Specific),
    ("deadlineexceeded", Some(Reason::Timeout), Weight::Specific),
    (
        "apiconnectionerror",
        Some(Reason::Timeout),
        Weight::Specific,
    ),
    ("apitimeouterror", Some(Reason::Timeout), Weight::Specific),
    ("connectionerror", Some(Reason::Timeout), Weight::Specific),
    ("servererror", Some(Reason::ServerError), Weight::Specific),
    (
        "internalservererror",
        Some(Reason::ServerError),
        Weight::Specific,
    ),
    (
        "internalserverexception",
        Some(Reason::ServerError),
        Weight::Specific,
    ),
    (
        "modeltimeoutexception",
        Some(Reason::Timeout),
        Weight::Specific,
    ),
    (
        "modelerrorexception",
        Some(Reason::ServerError),
        Weight::Specific,
    ),
    (
        "modelstreamerrorexception",
        Some(Reason::ServerError),
        Weight::Specific,
    ),
    ("insufficientquota", Some(Reason::Billing), Weight::Specific),
    (
        "accountbalanceerror",
        Some(Reason::Billing),
        Weight::Specific,
    ),
    // A parameter the endpoint does not take: the request is at fault,
    // whatever the status or the parameter's name (F-12.8).
    ("unknownparameter", Some(Reason::Format), Weight::Specific),
    (
        "unsupportedparameter",
        Some(Reason::Format),
        Weight::Specific,
    ),
    // Node's stream closed before its end: an incomplete answer (F-12.8).
    (
        "errstreamprematureclose",
        Some(Reason::Timeout),
        Weight::Specific,
    ),
    // Certificates the client refused (F-12.7): Node's and OpenSSL's names.
    (
        "certhasexpired",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "certnotyetvalid",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "certrevoked",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "certuntrusted",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "certsignaturefailure",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "errtlscertaltnameinvalid",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "depthzeroselfsignedcert",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "selfsignedcertinchain",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "unabletoverifyleafsignature",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "unabletogetissuercert",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "unabletogetissuercertlocally",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "certificateverifyfailed",
        Some(Reason::TlsCertificate),
        Weight::Specific,
    ),
    (
        "insufficientcredits",
        Some(Reason::Billing),
        Weight::Specific,
    ),
    ("arrearage", Some(Reason::Billing), Weight::Specific),
    (
        "accountoverdueerror",
        Some(Reason::Billing),
        Weight::Specific,
    ),
    (
        "billinginsufficientbalance",
        Some(Reason::Billing),
        Weight::Specific,
    ),
    (
        "exceededcurrentquotaerror",
        Some(Reason::Billing),
        Weight::Specific,
    ),
    ("paymentrequired", Some(Reason::Billing), Weight::Specific),
    ("billingnotactive", Some(Reason::Billing), Weight::Specific),
    // An invalid key is a typo or a rotation in progress: `auth`. Only
    // credentials refused for good are `auth_permanent`.
    ("invalidapikey", Some(Reason::Auth), Weight::Specific),
    ("apikeyinvalid", Some(Reason::Auth), Weight::Specific),
    ("permissionerror", Some(Reason::Auth), Weight::Specific),
    (
        "unrecognizedclientexception",
        Some(Reason::Auth),
        Weight::Specific,
    ),
    (
        "accountdeactivated",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "deactivatedworkspace",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "apikeyrevoked",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "tokenrevoked",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "invalidgrant",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "refreshtokenreused",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    (
        "accessterminatederror",
        Some(Reason::AuthPermanent),
        Weight::Specific,
    ),
    ("authenticationerror", Some(Reason::Auth), Weight::Specific),
    ("unauthenticated", Some(Reason::Auth), Weight::Specific),
    ("unauthorized", Some(Reason::Auth), Weight::Specific),
    ("permissiondenied", Some(Reason::Auth), Weight::Specific),
    (
        "accessdeniedexception",
        Some(Reason::Auth),
        Weight::Specific,
    ),
    (
        "expiredtokenexception",
        Some(Reason::Auth),
        Weight::Specific,
    ),
    ("invalidtoken", Some(Reason::Auth), Weight::Specific),
    ("tokenexpired", Some(Reason::Auth), Weight::Specific),
    (
        "modelnotfound",
        Some(Reason::ModelNotFound),
        Weight::Specific,
    ),
    (
        "notfounderror",
        Some(Reason::ModelNotFound),
        Weight::Specific,
    ),
    (
        "resourcenotfoundexception",
        Some(Reason::ModelNotFound),
        Weight::Specific,
    ),
    (
        "modelnotavailable",
        Some(Reason::ModelNotFound),
        Weight::Specific,
    ),
    (
        "contextlengthexceeded",
        Some(Reason::ContextOverflow),
        Weight::Specific,
    ),
    (
        "modelcontextwindowexceeded",
        Some(Reason::ContextOverflow),
        Weight::Specific,
    ),
    (
        "requesttoolarge",
        Some(Reason::ContextOverflow),
        Weight::Specific,
    ),
    (
        "exceedcontextsizeerror",
        Some(Reason::ContextOverflow),
        Weight::Specific,
    ),
    (
        "sessionexpired",
        Some(Reason::SessionExpired),
        Weight::Specific,
    ),
    (
        "previousresponsenotfound",
        Some(Reason::SessionExpired),
        Weight::Specific,
    ),
    ("notfound", Some(Reason::ModelNotFound), Weight::Generic),
    ("internal", Some(Reason::ServerError), Weight::Generic),
    ("unavailable", Some(Reason::Overloaded), Weight::Generic),
    (
        "serviceunavailable",
        Some(Reason::Overloaded),
        Weight::Generic,
    ),
    (
        "serviceunavailableexception",
        Some(Reason::Overloaded),
        Weight::Generic,
    ),
    ("invalidrequesterror", Some(Reason::Format), Weight::Generic),
    ("invalidrequest", Some(Reason::Format), Weight::Generic),
    ("invalidargument", Some(Reason::Format), Weight::Generic),
    ("validationexception", Some(Reason::Format), Weight::Generic),
    ("badrequest", Some(Reason::Format), Weight::Generic),
    ("unprocessableentity", Some(Reason::Format), Weight::Generic),
    ("contentfilter", Some(Reason::Format), Weight::Generic),
    (
        "datainspectionfailed",
        Some(Reason::Format),
        Weight::Generic,
    ),
];

/// [`EXACT`] sorted by code at build time, so a lookup is a binary search
/// rather than a walk through every entry (a code is looked up for each
/// rule that asks about it).
const EXACT_SORTED: [(&str, Option<Reason>, Weight); EXACT.len()] = {
    let mut sorted = [EXACT[0]; EXACT.len()];
    let mut i = 0;
    while i < EXACT.len() {
        sorted[i] = EXACT[i];
        i += 1;
    }
    // Insertion sort: eighty entries, once, in the compiler.
    let mut i = 1;
    while i < sorted.len() {
        let mut j = i;
        while j > 0 && bytes_before(sorted[j].0.as_bytes(), sorted[j - 1].0.as_bytes()) {
            let moved = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = moved;
            j -= 1;
        }
        i += 1;
    }
    sorted
};

/// Whether `a` sorts strictly before `b`, byte by byte (`str`'s order).
const fn bytes_before(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// One code of a level, folded and looked up once: the rules ask about the
/// same code several times.
#[derive(Debug, Clone, Copy)]
pub struct Code {
    folded: [u8; MAX_CODE_LEN],
    /// Bytes of `folded` in use; 0 when the code does not fold to a code.
    folded_len: usize,
    known: Option<(Option<Reason>, Weight)>,
}

impl Code {
    /// Reads `code`.
    pub fn read(code: &str) -> Code {
        let mut folded = [0u8; MAX_CODE_LEN];
        let folded_len = fold(code, &mut folded).map_or(0, str::len);
        let known = match &folded[..folded_len] {
            [] => None,
            bytes => lookup_folded(std::str::from_utf8(bytes).unwrap_or_default()),
        };
        Code {
            folded,
            folded_len,
            known,
        }
    }

    /// What the code says (see [`lookup`]).
    pub fn known(&self) -> Option<(Option<Reason>, Weight)> {
        self.known
    }

    /// Whether the folded code holds `word`, folded the same way
    /// (`throttling` in `Throttling.AllocationQuota`).
    pub fn folded_contains(&self, word: &str) -> bool {
        let mut buffer = [0u8; MAX_CODE_LEN];
        let Some(word) = fold(word, &mut buffer) else {
            return false;
        };
        let code = &self.folded[..self.folded_len];
        code.windows(word.len()).any(|w| w == word.as_bytes())
    }

    /// Whether the code folds to `folded` (`"server_error"` →
    /// `servererror`).
    pub fn folds_to(&self, folded: &str) -> bool {
        self.folded_len > 0 && &self.folded[..self.folded_len] == folded.as_bytes()
    }
}

/// `code` folded (letters and digits, lowercase) into `buffer`; `None`
/// when it is too long to be a code or folds to nothing.
fn fold<'a>(code: &str, buffer: &'a mut [u8; MAX_CODE_LEN]) -> Option<&'a str> {
    if code.len() > MAX_CODE_LEN {
        return None;
    }
    let mut len = 0;
    for byte in code.bytes().filter(u8::is_ascii_alphanumeric) {
        buffer[len] = byte.to_ascii_lowercase();
        len += 1;
    }
    let folded = std::str::from_utf8(&buffer[..len]).ok()?;
    (!folded.is_empty()).then_some(folded)
}

/// Whether `code` folds to `folded`: what [`Code::folds_to`] answers.
#[cfg(test)]
fn folds_to(code: &str, folded: &str) -> bool {
    let mut buffer = [0u8; MAX_CODE_LEN];
    fold(code, &mut buffer) == Some(folded)
}

/// What a code says: `None` when the code is unknown, `Some((None, _))` when
/// it is known to name no failure (an abort).
pub fn lookup(code: &str) -> Option<(Option<Reason>, Weight)> {
    let mut buffer = [0u8; MAX_CODE_LEN];
    lookup_folded(fold(code, &mut buffer)?)
}

/// [`lookup`] of an already folded code. Only the entries and prefixes
/// that start with the code's first byte are compared: in the sandbox a
/// search through all of them took ~1,160 instructions a code, this ~720
/// (callgrind, the reference corpus).
fn lookup_folded(folded: &str) -> Option<(Option<Reason>, Weight)> {
    let first = usize::from(*folded.as_bytes().first()?);
    let same_first =
        &EXACT_SORTED[usize::from(EXACT_STARTS[first])..usize::from(EXACT_STARTS[first + 1])];
    if let Ok(at) = same_first.binary_search_by(|(code, _, _)| (*code).cmp(folded)) {
        let (_, reason, weight) = same_first[at];
        return Some((reason, weight));
    }
    // In the list's order: the first prefix that matches decides. A byte
    // compared first spares the comparison call for nearly every prefix.
    PREFIXES
        .iter()
        .filter(|(prefix, _, _)| usize::from(prefix.as_bytes()[0]) == first)
        .find(|(prefix, _, _)| folded.starts_with(prefix))
        .map(|(_, reason, weight)| (Some(*reason), *weight))
}

/// Where the entries of [`EXACT_SORTED`] that start with each byte begin:
/// those that start with `b` are `EXACT_STARTS[b]..EXACT_STARTS[b + 1]`
/// (sorted, they are together). Built at compile time.
const EXACT_STARTS: [u8; 257] = exact_starts(&EXACT_SORTED);

/// [`EXACT_STARTS`] of `sorted`.
const fn exact_starts(sorted: &[(&str, Option<Reason>, Weight)]) -> [u8; 257] {
    assert!(sorted.len() < 256, "the offsets are bytes");
    let mut starts = [0u8; 257];
    let mut byte = 0;
    while byte < 257 {
        // How many entries start with a byte below `byte`.
        let mut before = 0;
        while before < sorted.len() && (sorted[before].0.as_bytes()[0] as usize) < byte {
            before += 1;
        }
        starts[byte] = before as u8;
        byte += 1;
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_codes_are_sorted_and_unique_for_the_search() {
        for pair in EXACT_SORTED.windows(2) {
            assert!(
                pair[0].0 < pair[1].0,
                "{:?} then {:?}",
                pair[0].0,
                pair[1].0
            );
        }
        for (code, reason, weight) in EXACT {
            assert_eq!(lookup(code), Some((*reason, *weight)), "{code}");
        }
    }

    /// The search by first byte answers what a walk of every entry and
    /// every prefix answers, for each entry, each prefix, and codes around
    /// them (one byte more, one less, another first byte).
    #[test]
    fn the_search_by_first_byte_answers_as_a_full_walk() {
        fn walked(folded: &str) -> Option<(Option<Reason>, Weight)> {
            if let Some((_, reason, weight)) = EXACT.iter().find(|(code, _, _)| *code == folded) {
                return Some((*reason, *weight));
            }
            PREFIXES
                .iter()
                .find(|(prefix, _, _)| folded.starts_with(prefix))
                .map(|(_, reason, weight)| (Some(*reason), *weight))
        }
        let mut codes: Vec<String> = Vec::new();
        for code in EXACT
            .iter()
            .map(|e| e.0)
            .chain(PREFIXES.iter().map(|p| p.0))
        {
            codes.push(code.to_owned());
            codes.push(format!("{code}x"));
            codes.push(code[..code.len() - 1].to_owned());
            codes.push(format!("a{code}"));
            codes.push(format!("z{}", &code[1..]));
        }
        codes.extend(('0'..='9').chain('a'..='z').map(String::from));
        codes.push("\u{7f}".to_owned());
        for code in codes.iter().filter(|code| !code.is_empty()) {
            assert_eq!(lookup_folded(code), walked(code), "{code:?}");
        }
        assert_eq!(lookup_folded(""), None);
        assert_eq!(lookup_folded("é"), None);
    }

    #[test]
    fn a_read_code_answers_as_the_lookups_do() {
        let long = "x".repeat(MAX_CODE_LEN + 1);
        for code in [
            "RATE_LIMIT_EXCEEDED",
            "server_error",
            "UND_ERR_ABORTED",
            "throttled",
            "not a code at all",
            "___",
            "",
            "é_rate_limit",
            long.as_str(),
        ] {
            let read = Code::read(code);
            assert_eq!(read.known(), lookup(code), "{code:?}");
            for folded in ["ratelimitexceeded", "servererror", "underraborted", "x"] {
                assert_eq!(read.folds_to(folded), folds_to(code, folded), "{code:?}");
            }
        }
    }

    #[test]
    fn spelling_does_not_matter() {
        for code in ["RATE_LIMIT_EXCEEDED", "rate_limit_error", "RateLimitError"] {
            assert_eq!(
                lookup(code),
                Some((Some(Reason::RateLimit), Weight::Specific)),
                "{code}"
            );
        }
        assert_eq!(
            lookup("ETIMEDOUT"),
            Some((Some(Reason::Timeout), Weight::Specific))
        );
        assert_eq!(
            lookup("ThrottlingException"),
            Some((Some(Reason::RateLimit), Weight::Specific))
        );
    }

    #[test]
    fn aborts_and_unknown_codes() {
        assert_eq!(lookup("UND_ERR_ABORTED"), Some((None, Weight::Specific)));
        assert_eq!(
            lookup("UND_ERR_SOCKET"),
            Some((Some(Reason::Timeout), Weight::Specific))
        );
        assert_eq!(lookup("something_else"), None);
        assert_eq!(lookup("___"), None);
        assert_eq!(lookup(&"x".repeat(200)), None);
    }

    #[test]
    fn generic_codes_are_marked() {
        assert_eq!(
            lookup("INVALID_ARGUMENT"),
            Some((Some(Reason::Format), Weight::Generic))
        );
    }

    #[test]
    fn exact_table_is_folded_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for (code, _, _) in EXACT {
            assert!(code
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
            assert!(seen.insert(*code), "duplicate {code}");
        }
    }
}
