"""The engine: local state, the home lock, push, pull plans and the journaled install."""
