"""The failure protocol: typed failures, their hooks, redaction, secret scrubbing, auth status."""
