"""roam inside Hermes Agent: the plugin behind `hermes roam`, `/roam`, the tools and hooks.

Hermes finds the plugin through the entry point `roam` in group `hermes_agent.plugins`
(`roam_core.hermes.plugin:register`). Nothing here imports Hermes at import time: every
Hermes module is imported inside the function that needs it, so `roam_core` imports and
runs where Hermes is not installed.
"""
