"""Schemathesis hooks for mnemo's API fuzz (scripts/api-fuzz).

`POST /import` takes JSON lines (`application/x-ndjson`), which
Schemathesis cannot serialise by itself: a generated string is sent as
the body, as it is.
"""

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")
