"""One secret rule set for everything that leaves the machine.

The session mirror masks what these rules find before a turn is spooled for Discord
(`roam_core.mirror.redact`); the push scanner refuses to upload a shared file in which they
find something (`roam_core.secretscan.scan`). `rules.RULES` is the single table both use and
the one docs/security.md shows; `literals` adds the values of this home's `.env` files and
roam's own secrets, read from disk for matching only.
"""
