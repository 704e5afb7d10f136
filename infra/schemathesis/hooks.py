"""adtrail's own hooks for schemathesis: a check and a body map.

The check: no answer carries a secret. The secrets are the sample agency's
pasted token, the fake Meta app's secret, and the prefixes of every token
the fake's Facebook Login issues (system user, short-lived and long-lived
user tokens), from ADTRAIL_SECRETS.

The map: an event's or a lead's `occurredAt` is judged against the clock
(an event within the last 90 days, a lead not in the future), which JSON
Schema cannot say, so nearly every generated event and lead was refused
before the API's logic past that field ran. Each `occurredAt` the schema
allows is moved into the last 89 days, keeping its variety; a value the
schema refuses (a negative case's) is left as drawn, so the case stays
negative.
"""

import os
import time

import schemathesis

SECRETS = [s for s in os.environ.get("ADTRAIL_SECRETS", "").split() if s]


@schemathesis.check
def no_secret_in_any_answer(ctx, response, case):
    text = response.text or ""
    for secret in SECRETS:
        if secret in text:
            raise AssertionError(f"an answer carries a secret ({secret[:4]}…)")
    for name, values in response.headers.items():
        for value in values if isinstance(values, list) else [values]:
            for secret in SECRETS:
                if secret in str(value):
                    raise AssertionError(f"header {name} carries a secret ({secret[:4]}…)")
    return None


MILLIS_MAX = 253402300799999  # the schema's Millis: the last instant of 9999
WINDOW_MS = 89 * 86_400_000


def _recent(value, now_ms):
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MILLIS_MAX:
        return now_ms - 60_000 - value % WINDOW_MS
    return value


def _map_times(node, now_ms):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "occurredAt":
                node[key] = _recent(value, now_ms)
            else:
                _map_times(value, now_ms)
    elif isinstance(node, list):
        for item in node:
            _map_times(item, now_ms)


@schemathesis.hook
def map_body(ctx, body):
    _map_times(body, int(time.time() * 1000))
    return body
