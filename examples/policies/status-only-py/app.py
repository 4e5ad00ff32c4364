"""A failover policy in Python (contract failover:policy@1.0.0), built with
componentize-py: it names a failure by its HTTP status alone, as
examples/policies/status-only does in Rust, and makes every other decision
with simple rules of its own (OAuth first and least recently used first,
a cooldown ladder, the chain in order).
"""

from wit_world import exports
from wit_world.exports import profiles as p
from wit_world.exports import runner as r
from wit_world.exports import types as t
from wit_world.exports.meta import PolicyInfo

R = t.FailureReason
MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
SLOW_AFTER_STRIKES = 3

STATUS_REASONS = {
    429: R.RATE_LIMIT, 503: R.OVERLOADED, 529: R.OVERLOADED, 402: R.BILLING,
    401: R.AUTH, 403: R.AUTH_PERMANENT, 408: R.TIMEOUT, 504: R.TIMEOUT,
    404: R.MODEL_NOT_FOUND, 400: R.FORMAT, 413: R.FORMAT, 422: R.FORMAT,
}

# The endpoint's failures and the request's own leave a credential alone.
NOT_THE_CREDENTIAL = {R.SERVER_ERROR, R.TLS_CERTIFICATE, R.FORMAT,
                      R.CONTEXT_OVERFLOW, R.SESSION_EXPIRED}


def reason_of_status(status):
    if status in STATUS_REASONS:
        return STATUS_REASONS[status]
    if status is not None and 500 <= status <= 599:
        return R.SERVER_ERROR
    return R.UNKNOWN


class Classifier(exports.Classifier):
    def classify(self, report):
        status = next((l.status for l in report.levels if l.status is not None), None)
        reason = reason_of_status(status)
        detail = t.FailureDetail.UNCLASSIFIED if reason == R.UNKNOWN else None
        return t.Classification(reason, detail, None, None)


def block_of(usage, model, now):
    windows = [(usage.disabled_until, usage.disabled_reason),
               (usage.cooldown_until, usage.cooldown_reason)]
    windows += [(c.until, c.reason) for c in usage.model_cooldowns if c.model == model]
    live = [(until, reason) for until, reason in windows
            if until is not None and reason is not None and until > now]
    if not live:
        return None
    until, reason = max(live, key=lambda w: w[0])
    return t.Block(reason, until)


KIND_RANK = {t.CredentialKind.OAUTH: 0, t.CredentialKind.TOKEN: 1, t.CredentialKind.API_KEY: 2}


class Profiles(exports.Profiles):
    def order_profiles(self, request):
        if request.explicit_order is not None:
            by_id = {s.id: s for s in request.stored}
            chosen = [by_id[i] for i in dict.fromkeys(request.explicit_order) if i in by_id]
        else:
            chosen = sorted((s for s in request.stored if s.provider == request.provider),
                            key=lambda s: (KIND_RANK[s.kind], s.usage.last_used or 0))
        ranked = [t.RankedProfile(s.id, block_of(s.usage, request.model, request.now_ms))
                  for s in chosen]
        # Usable profiles keep their order; blocked ones follow, soonest free first.
        return sorted(ranked, key=lambda rp: rp.blocked.until if rp.blocked else 0)

    def pin_profile(self, request):
        current = next((rp for rp in request.ranked if rp.id == request.current), None)
        keep = current is not None and (
            request.source == t.PinSource.USER
            or (current.blocked is None and not request.session_reset))
        if keep:
            return p.PinDecision(current.id, request.source or t.PinSource.AUTO,
                                 request.compaction_count)
        usable = [rp for rp in request.ranked if rp.blocked is None] or request.ranked
        profile = usable[0].id if usable else None
        return p.PinDecision(profile, t.PinSource.AUTO, request.compaction_count)

    def record_attempt(self, usage, event, config):
        now = event.now_ms
        if isinstance(event.outcome, p.Outcome_Success):
            usage.last_used = now
            usage.cooldown_until = None
            usage.cooldown_reason = None
            usage.model_cooldowns = [c for c in usage.model_cooldowns
                                     if c.model != event.model and c.until > now]
            usage.error_count = 0
            usage.failure_counts = []
            return usage
        return record_failure(usage, event.outcome.value, event.model, now, config)


def record_failure(usage, failure, model, now, config):
    reason = failure.reason
    if reason in NOT_THE_CREDENTIAL:
        return usage
    in_window = (usage.last_failure_at is not None
                 and now - usage.last_failure_at < config.failure_window_ms)
    if not in_window:
        usage.error_count = 0
        usage.failure_counts = []
    usage.error_count += 1
    usage.last_failure_at = now
    scope = model if reason == R.RATE_LIMIT else None
    for count in usage.failure_counts:
        if count.reason == reason and count.model == scope:
            count.count += 1
            break
    else:
        usage.failure_counts.append(t.FailureCount(reason, scope, 1))
    ladder = min(MINUTE_MS * 5 ** (usage.error_count - 1), HOUR_MS)
    wait = max(ladder, min(failure.retry_after_ms or 0, HOUR_MS))
    if reason in (R.BILLING, R.AUTH_PERMANENT):
        top = max(config.billing_max_ms, MINUTE_MS)
        usage.disabled_until = now + min(max(config.billing_backoff_ms, MINUTE_MS), top, 24 * HOUR_MS)
        usage.disabled_reason = reason
    elif scope is not None:
        usage.model_cooldowns = [c for c in usage.model_cooldowns if c.model != scope]
        usage.model_cooldowns.append(t.ModelCooldown(scope, now + wait, reason))
    else:
        usage.cooldown_until = now + wait
        usage.cooldown_reason = reason
    return usage


S = t.SelectionSource


class Runner(exports.Runner):
    def plan_run(self, request):
        session = request.session_override
        if request.requested is not None:
            first, source = request.requested, S.USER_OVERRIDE
        elif session is not None:
            source = {t.PinSource.USER: S.USER_OVERRIDE,
                      t.PinSource.AUTO: S.AUTO_OVERRIDE}.get(session.source, S.LEGACY_OVERRIDE)
            first = session.model
        elif request.agent_primary is not None:
            first, source = request.agent_primary, S.AGENT_PRIMARY
        else:
            first, source = request.configured_primary, S.CONFIGURED_DEFAULT
        strict = source == S.USER_OVERRIDE and request.fallbacks_override is None
        candidates = [first] if first is not None else []
        if candidates and not strict:
            fallbacks = request.fallbacks_override
            if fallbacks is None:
                fallbacks = request.configured_fallbacks
            for model in list(fallbacks) + [request.configured_primary]:
                if model is not None and model not in candidates and len(candidates) < 64:
                    candidates.append(model)
        return r.RunPlan(candidates, source, strict, False, False)

    def decide_candidate(self, request):
        usable = [rp.id for rp in request.ranked if rp.blocked is None]
        slow = request.health.slow_until is not None and request.health.slow_until > request.now_ms
        if slow and request.later_candidates:
            return r.CandidateDecision_Skip(R.TIMEOUT)
        if usable:
            return r.CandidateDecision_Attempt(usable)
        blocks = [rp.blocked for rp in request.ranked if rp.blocked is not None]
        soonest = min(blocks, key=lambda b: b.until) if blocks else None
        return r.CandidateDecision_Skip(soonest.reason if soonest else R.UNKNOWN)

    def record_model_attempt(self, health, end, now_ms):
        if end == t.AttemptEnd.ANSWERED:
            return t.ModelHealth(0, None, None, None)
        strikes = health.strikes + 1
        slow_until = now_ms + MINUTE_MS if strikes >= SLOW_AFTER_STRIKES else None
        return t.ModelHealth(strikes, now_ms, slow_until, None)

    def next_step(self, attempt, config):
        nxt = attempt.position + 1
        has_next = nxt < len(attempt.chain)
        reason = attempt.reason
        rotate_ok = attempt.profiles_left > 0 and not attempt.user_pinned_profile
        if attempt.aborted:
            return r.RunStep_Stop(r.StopReason.ABORTED)
        if reason == R.FORMAT:
            return r.RunStep_Stop(r.StopReason.FORMAT)
        if reason == R.SESSION_EXPIRED:
            return r.RunStep_Stop(r.StopReason.SESSION_EXPIRED)
        if reason == R.CONTEXT_OVERFLOW:
            later = attempt.chain[nxt:]
            if attempt.overflow_to in later:
                return r.RunStep_Candidate(nxt + later.index(attempt.overflow_to))
            return r.RunStep_Stop(r.StopReason.CONTEXT_OVERFLOW)
        if reason == R.RATE_LIMIT and rotate_ok and attempt.rotations < config.rate_limited_profile_rotations:
            return r.RunStep_RotateProfile(0)
        if reason == R.OVERLOADED and rotate_ok and attempt.rotations < config.overloaded_profile_rotations:
            return r.RunStep_RotateProfile(min(config.overloaded_backoff_ms, config.wait_cap_ms))
        if reason in (R.AUTH, R.AUTH_PERMANENT, R.BILLING, R.TIMEOUT) \
                and attempt.profiles_left > 0 and not attempt.hung:
            return r.RunStep_RotateProfile(0)
        if has_next:
            return r.RunStep_Candidate(nxt)
        return r.RunStep_Stop(r.StopReason.EXHAUSTED)

    def summarise(self, attempts, profiles, now_ms):
        reasons = {a.reason for a in attempts}
        common = attempts[0].reason if len(reasons) == 1 else None
        return r.RunSummary(common, None)


class Meta(exports.Meta):
    def describe(self):
        return PolicyInfo("status-only-py", "0.1.0")
