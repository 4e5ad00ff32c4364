//! Reads and atomic compare-and-set writes of JSON values under Redis keys.
//!
//! The policy decides in the host, so a change cannot run inside Redis;
//! instead every read-modify-write is optimistic: read the raw values,
//! decide, then write with a Lua script that applies all the writes only
//! if every key still holds what was read. A replica that lost the race
//! reads again and decides again — no update is ever lost. (`WATCH`/
//! `MULTI` would do the same but pins a connection per transaction.)

use redis::{Connection, RedisResult, Script};

/// One key's write: what it must still hold, and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Write {
    /// The key.
    pub key: String,
    /// Its value as read; `None`: it must not exist.
    pub expected: Option<String>,
    /// The new value; `None` deletes the key.
    pub value: Option<String>,
    /// Expiry in ms from now; 0 keeps the value until deleted.
    pub ttl_ms: u64,
}

/// ARGV holds three strings per key: expected (`""` = absent), new
/// (`""` = delete) and the TTL in ms (`"0"` = none). Values are JSON, never
/// empty, so `""` is free to mean absence.
const COMPARE_AND_SET: &str = r"
for i, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  local expected = ARGV[3 * i - 2]
  if current == false then
    if expected ~= '' then return 0 end
  elseif current ~= expected then
    return 0
  end
end
for i, key in ipairs(KEYS) do
  local value = ARGV[3 * i - 1]
  local ttl = ARGV[3 * i]
  if value == '' then
    redis.call('DEL', key)
  elseif ttl == '0' then
    redis.call('SET', key, value)
  else
    redis.call('SET', key, value, 'PX', ttl)
  end
end
return 1
";

thread_local! {
    /// The script with its SHA computed once (EVALSHA, falling back to
    /// EVAL when a restarted server has forgotten it).
    static SCRIPT: Script = Script::new(COMPARE_AND_SET);
}

/// The raw values of `keys`, in order (`None`: no such key).
pub(super) fn read(
    connection: &mut Connection,
    keys: &[String],
) -> RedisResult<Vec<Option<String>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    redis::cmd("MGET").arg(keys).query(connection)
}

/// Applies every write if no key changed since it was read; `false` when
/// one had (read again and decide again).
pub(super) fn compare_and_set(connection: &mut Connection, writes: &[Write]) -> RedisResult<bool> {
    if writes.is_empty() {
        return Ok(true);
    }
    SCRIPT.with(|script| {
        let mut invocation = script.prepare_invoke();
        for write in writes {
            invocation
                .key(&write.key)
                .arg(write.expected.as_deref().unwrap_or(""))
                .arg(write.value.as_deref().unwrap_or(""))
                .arg(write.ttl_ms);
        }
        let applied: i64 = invocation.invoke(connection)?;
        Ok(applied == 1)
    })
}

/// Every key matching `pattern` (SCAN, so a large keyspace is not blocked).
pub(super) fn scan(connection: &mut Connection, pattern: &str) -> RedisResult<Vec<String>> {
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(500)
            .query(connection)?;
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// `text` with the glob characters of a SCAN pattern escaped.
pub(super) fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
