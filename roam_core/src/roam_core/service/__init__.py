"""The service layer both faces call: the `roam` CLI and the Hermes plugin.

It sits between the faces and the engine, so neither face imports the other: what both
need (is roam enabled in this Hermes, auto sync's own state, the verbs as typed functions)
lives here.
"""
