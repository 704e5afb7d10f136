"""adtrail's own check for schemathesis: no answer carries a secret.

The secrets are the sample agency's pasted token, the fake Meta app's
secret, and the prefixes of every token the fake's Facebook Login issues
(system user, short-lived and long-lived user tokens), from ADTRAIL_SECRETS.
"""

import os

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
