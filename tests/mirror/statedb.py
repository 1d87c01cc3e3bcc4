"""Builds a state.db shaped like Hermes 0.19's (schema_version 22, WAL), for tests."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

SESSIONS = """CREATE TABLE sessions (
 id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, session_key TEXT, chat_id TEXT,
 chat_type TEXT, thread_id TEXT, display_name TEXT, origin_json TEXT, expiry_finalized INTEGER,
 model TEXT, model_config TEXT, system_prompt TEXT,
 parent_session_id TEXT REFERENCES sessions(id), started_at REAL NOT NULL, ended_at REAL,
 end_reason TEXT, message_count INTEGER, tool_call_count INTEGER, input_tokens INTEGER,
 output_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER,
 reasoning_tokens INTEGER, cwd TEXT, git_branch TEXT, git_repo_root TEXT,
 billing_provider TEXT, billing_base_url TEXT, billing_mode TEXT, estimated_cost_usd REAL,
 actual_cost_usd REAL, cost_status TEXT, cost_source TEXT, pricing_version TEXT, title TEXT,
 api_call_count INTEGER, handoff_state TEXT, handoff_platform TEXT, handoff_error TEXT,
 compression_failure_cooldown_until REAL, compression_failure_error TEXT,
 compression_fallback_streak INTEGER, profile_name TEXT, rewind_count INTEGER,
 archived INTEGER)"""
MESSAGES = """CREATE TABLE messages (
 id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
 role TEXT, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
 effect_disposition TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT,
 reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT, codex_reasoning_items TEXT,
 codex_message_items TEXT, platform_message_id TEXT, observed INTEGER,
 active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT)"""


class StateDB:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(SESSIONS)
        db.execute("CREATE UNIQUE INDEX idx_sessions_title ON sessions(title) "
                   "WHERE title IS NOT NULL")
        db.execute(MESSAGES)
        db.execute("CREATE TABLE schema_version (version INTEGER)")
        db.execute("INSERT INTO schema_version VALUES (22)")
        db.execute("CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT)")
        db.commit()
        db.close()

    def session(self, session_id: str, started_at: float, title: str | None = None,
                source: str = "cli") -> None:
        with contextlib.closing(sqlite3.connect(self.path)) as db, db:
            db.execute("INSERT INTO sessions (id, source, started_at, title, model, "
                       "message_count) VALUES (?, ?, ?, ?, 'stub-model', 0)",
                       (session_id, source, started_at, title))

    def message(self, session_id: str, role: str, content: str | None, when: float,
                tool_calls: list | None = None, active: int = 1) -> None:
        with contextlib.closing(sqlite3.connect(self.path)) as db, db:
            db.execute("INSERT INTO messages (session_id, role, content, tool_calls, "
                       "timestamp, active, api_content) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (session_id, role, content, json.dumps(tool_calls) if tool_calls
                        else None, when, active,
                        f"{content}\n\nINJECTED-CONTEXT" if role == "user" else None))

    def turn(self, session_id: str, user: str, reply: str, when: float,
             with_tool: bool = False) -> None:
        self.message(session_id, "user", user, when)
        if with_tool:
            call = [{"id": "call_1", "type": "function",
                     "function": {"name": "terminal", "arguments": "{\"cmd\": \"ls\"}"}}]
            self.message(session_id, "assistant", "", when + 1, tool_calls=call)
            self.message(session_id, "tool", "TOOL-OUTPUT file1 file2", when + 2)
        self.message(session_id, "assistant", reply, when + 3)
