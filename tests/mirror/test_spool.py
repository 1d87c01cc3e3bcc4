from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from roam_core.mirror.events import TurnEvent, make_live_event
from roam_core.mirror.sink import Receipt
from roam_core.mirror.spool import Spool


def _event(session: str, number: int, redacted: bool = True, text: str = "") -> TurnEvent:
    return make_live_event(session_id=session, turn_id=str(number),
                           user_message=text or f"{session} question {number}",
                           reply=f"answer {number}", when=1000.0 + number).with_text(
                               redacted=redacted)


def test_append_and_read_back_in_order(root: Path) -> None:
    spool = Spool(root)
    events = [_event("a", 1), _event("b", 1), _event("a", 2)]
    for event in events:
        spool.append(event)
    assert [e.event_id for e in spool.events()] == [e.event_id for e in events]
    assert spool.events()[0] == events[0]


def test_files_are_private(root: Path) -> None:
    spool = Spool(root)
    spool.append(_event("a", 1))
    spool.record_delivery(Receipt("x", "id"))
    spool.write_state({"a": 1})
    assert stat.S_IMODE(spool.dir.stat().st_mode) == 0o700
    for path in (spool.events_path, spool.delivered_path, spool.state_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_redacted_copy_supersedes_the_raw_one_in_place(root: Path) -> None:
    spool = Spool(root)
    raw = _event("a", 1, redacted=False, text="raw text")
    spool.append(raw)
    spool.append(_event("a", 2))
    spool.append(raw.with_text(user_message="clean text", redacted=True))
    spool.append(raw)  # a late raw copy never wins over the redacted one
    events = spool.events()
    assert [e.turn_id for e in events] == ["1", "2"]
    assert events[0].redacted and events[0].user_message == "clean text"


def test_a_torn_line_is_skipped_and_the_next_append_starts_fresh(root: Path) -> None:
    spool = Spool(root)
    spool.append(_event("a", 1))
    with spool.events_path.open("ab") as handle:
        handle.write(b'{"kind":"event","event_id":"torn","sess')  # a crash mid-write
    assert len(spool.events()) == 1
    spool.append(_event("a", 2))
    assert [e.turn_id for e in spool.events()] == ["1", "2"]


def test_deliveries_are_per_sink(root: Path) -> None:
    spool = Spool(root)
    first, second = _event("a", 1), _event("a", 2)
    spool.append_many([first, second])
    spool.record_delivery(Receipt("one", first.event_id))
    assert [e.event_id for e in spool.pending("one")] == [second.event_id]
    assert len(spool.pending("two")) == 2


def test_compaction_drops_delivered_text_but_remembers_the_turn(root: Path) -> None:
    spool = Spool(root)
    first, second = _event("a", 1, text="secretish words"), _event("a", 2)
    spool.append_many([first, second])
    spool.record_delivery(Receipt("one", first.event_id))
    known = spool.known_turns()
    assert spool.compact(["one"], min_bytes=0) == 1
    assert b"secretish" not in spool.events_path.read_bytes()
    assert [e.event_id for e in spool.events()] == [second.event_id]
    assert spool.known_turns() == known
    assert stat.S_IMODE(spool.events_path.stat().st_mode) == 0o600


def test_compaction_waits_for_every_sink(root: Path) -> None:
    spool = Spool(root)
    event = _event("a", 1)
    spool.append(event)
    spool.record_delivery(Receipt("one", event.event_id))
    assert spool.compact(["one", "two"], min_bytes=0) == 0
    assert spool.events() == [event]


def test_concurrent_appenders_lose_nothing(root: Path) -> None:
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from roam_core.mirror.events import make_live_event\n"
        "from roam_core.mirror.spool import Spool\n"
        "spool = Spool(Path(sys.argv[1]))\n"
        "for n in range(40):\n"
        "    spool.append(make_live_event(session_id=sys.argv[2], turn_id=str(n),\n"
        "        user_message='x' * 3000, reply='y'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), f"s{i}"])
             for i in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    events = Spool(root).events()
    assert len(events) == 160
    for i in range(4):
        turns = [e.turn_id for e in events if e.session_id == f"s{i}"]
        assert turns == [str(n) for n in range(40)]
    assert os.path.getsize(Spool(root).events_path) > 160 * 3000
