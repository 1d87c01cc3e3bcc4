"""The optional tiers each device opts into: the session archive and cron job definitions.

`sessions` exports this device's finished sessions with Hermes's own exporter for a push;
`archive` is the store namespace they travel in and the read-only copies a pull lands;
`cron` turns `cron/jobs.json` into the definitions that travel and merges them back, paused;
`cron_lock` holds Hermes's own cron lock around an install that touches a jobs file.
"""
