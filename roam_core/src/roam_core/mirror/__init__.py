"""The session mirror: turn events, redaction, a durable spool and the sender that drains it.

A finished Hermes turn becomes a `TurnEvent` (`events`), is redacted fail-closed (`redact`)
and appended to a spool on disk (`spool`) by the per-turn hook (`hermes_hook`) without ever
touching the network. A background thread (`sender`) drains the spool to every enabled sink
(`sink` defines the protocol) and records what each delivered. `backfill` replays past
sessions from Hermes's state.db through the same path.
"""
