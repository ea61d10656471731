"""Prints the HMAC-SHA256 of stdin, keyed by $SIGNING_KEY, as lowercase hex."""

import hashlib
import hmac
import os
import sys

key = os.environ.get("SIGNING_KEY")
if not key:
    sys.stderr.write("SIGNING_KEY is not set\n")
    sys.exit(2)
payload = sys.stdin.buffer.read()
print(hmac.new(key.encode(), payload, hashlib.sha256).hexdigest())
