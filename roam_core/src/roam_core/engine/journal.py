"""The journaled install: every pull, merge and restore changes the home only through here.

Order of work (docs/decisions.md, "Installs"):
1. the journal is written (phase `staging`) naming every target, temp and backup path;
2. new contents go to temp files beside their targets, except that a folder which does
   not exist yet is built whole under a temp name beside it; replaced files are copied to
   `roam/backups/<stamp>/`, and the file system is synced;
3. phase `installing`: temps are renamed over their targets, each new folder renamed into
   place once (so it appears complete), deletions unlinked, synced;
4. the commit point: the state (state.db), naming this install's stamp, is committed; then
   the journal goes away.
A crash before the commit point is rolled back by the next command, a crash after it rolled
forward (the journal is removed); a target whose original cannot be proven restorable is
never deleted.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import itertools
import json
import os
import shutil
import signal
import stat as stat_module
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _quoted
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from roam_core import libc
from roam_core.engine.prefetch import Content, Prefetch
from roam_core.engine.progress import ProgressSink
from roam_core.engine.scan import read_umask, stat_signature
from roam_core.engine.state import LocalState, load_state, save_state
from roam_core.engine.writers import SMALL_FILE, WriterProcess, write_file
from roam_core.errors import RoamError, UserError, describe_os_error
from roam_core.fs import (
    TEMP_PREFIX,
    ensure_private_dir,
    fsync_dir,
    rename_noreplace,
    write_atomic,
)

JOURNAL = "journal.json"
#: `backups/<stamp>.kept.json`: the versions in `backups/<stamp>/` that only it holds
KEPT_SUFFIX = ".kept.json"
KILL_ENV = "ROAM_TEST_KILL_AT"
KILL_SIGNAL_ENV = "ROAM_TEST_KILL_SIGNAL"

if TYPE_CHECKING:
    from roam_core.engine.session import Session


def kill_point(name: str) -> None:
    """Crash-injection hook for tests: SIGKILL (or `ROAM_TEST_KILL_SIGNAL`) at the named step."""
    if os.environ.get(KILL_ENV) == name:
        sent = getattr(signal, os.environ.get(KILL_SIGNAL_ENV, "SIGKILL"))
        if sent == signal.SIGINT and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # a shell without job control starts background commands with SIGINT ignored
            # (a CI script run with `&`); a terminal's Ctrl-C, which this stands for, is not
            signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), sent)


def _per_file_kills() -> bool:
    """Whether the per-file kill points are armed (read once per install, not per file)."""
    return KILL_ENV in os.environ


def syncfs(path: Path) -> None:
    """Flush the file system holding `path` (one call instead of an fsync per file)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        call = libc.function("syncfs", "c_int")
        if call is None or call(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def sha256_file(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


#: What an op does to its file: write new content, or delete it.
OpAction = Literal["write", "delete"]


@dataclass(slots=True)
class Op:
    """One planned change of one file (slotted: a pull holds one per file it writes)."""

    rel: str
    action: OpAction
    sha256: str | None = None  # of the new content (write)
    mode: int = 0o644
    expect: list[int] | None = None  # stat signature the target had at planning; None = absent
    original_sha: str | None = None
    source: Callable[[], Iterator[bytes]] | None = field(default=None, repr=False)
    backup: str | None = None
    #: the missing folder this new file arrives in with its whole staged tree, if any (the
    #: install's own key of `staged`: one string per folder, not one per file)
    folder: str | None = None

    def as_json(self, temp: str | None) -> dict[str, Any]:
        """The op as the journal names it, with its temp path (`Install.temp`)."""
        return {"rel": self.rel, "action": self.action, "sha256": self.sha256,
                "mode": self.mode, "had_original": self.expect is not None,
                "original_sha": self.original_sha, "temp": temp, "backup": self.backup}


def _stamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%fZ")





def _then(first: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks already taken, then the rest of the stream."""
    yield from first
    first.clear()  # written: not held while the rest streams
    yield from rest


def _json_text(value: str | None) -> str:
    """`value` as `json.dumps` writes it (ASCII, escaped), or null."""
    return "null" if value is None else _quoted(value)


def _op_text(op: Op, temp: str | None) -> str:
    """`json.dumps(op.as_json(temp))`, to the letter, made without the dict or the encoder."""
    return (f'{{"rel": {_quoted(op.rel)}, "action": {_quoted(op.action)}, '
            f'"sha256": {_json_text(op.sha256)}, "mode": {int(op.mode)}, '
            f'"had_original": {"false" if op.expect is None else "true"}, '
            f'"original_sha": {_json_text(op.original_sha)}, "temp": {_json_text(temp)}, '
            f'"backup": {_json_text(op.backup)}}}')


def _encoded_ops(ops: list[Op], temp: Callable[[int], str | None],
                 batch: int = 1024) -> Iterator[bytes]:
    """The journal's ops as a JSON list, then the journal's closing brace, in pieces.

    Each op is formatted straight to its text (`_op_text`): a dict per op through
    `json.dumps` was ~0.5 s of the install's thread at 100,000 files, before any file.
    """
    yield b"["
    for start in range(0, len(ops), batch):
        text = ", ".join([_op_text(ops[index], temp(index))
                          for index in range(start, min(start + batch, len(ops)))])
        yield (text if not start else ", " + text).encode()
    yield b"]}"


def _tail(path: Path, offset: int, size: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of `path` from `offset` on, in pieces."""
    with path.open("rb") as handle:
        handle.seek(offset)
        while piece := handle.read(size):
            yield piece


def _folders_of(rel: str) -> Iterator[str]:
    """Each folder on the way to the file `rel`, outermost first ("a", "a/b" for "a/b/c")."""
    parts = rel.split("/")[:-1]
    for index in range(len(parts)):
        yield "/".join(parts[: index + 1])


def _is_folder(root: str, folder: str, rel: str) -> bool:
    """Whether `folder` is a real directory (False when absent); anything else is refused."""
    try:
        st = os.lstat(os.path.join(root, folder))
    except FileNotFoundError:
        return False
    if not stat_module.S_ISDIR(st.st_mode):
        raise UserError(f"cannot install {rel}: {folder} is not a folder")
    return True


def _safe_parent(root: Path, rel: str, created: list[str], checked: set[str]) -> None:
    """Make the target's folders real directories; a symlink on the way is refused.

    `checked` holds the folders (relative) already proven directories by this install, so
    20,000 files in 3,000 folders cost one `lstat` per folder, not one per path segment.
    """
    base = str(root)
    for folder in _folders_of(rel):
        if folder in checked:
            continue
        if not _is_folder(base, folder, rel):
            os.mkdir(os.path.join(base, folder), 0o755)
            created.append(folder)
        checked.add(folder)


def _check_target(root: Path, op: Op) -> None:
    path = os.path.join(root, op.rel)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if op.expect is not None:
            raise UserError(f"{op.rel} changed while installing (it is gone); nothing was "
                            "installed") from None
        return
    if op.expect is None or not stat_module.S_ISREG(st.st_mode) or stat_signature(st) != op.expect:
        raise UserError(f"{op.rel} changed while installing; nothing was installed")


class Install:
    """One journaled install of a list of ops into a home."""

    def __init__(self, root: Path, state_dir: Path, ops: list[Op],
                 progress: ProgressSink | None = None, unpushed: Collection[str] = ()) -> None:
        self.root = root
        #: paths whose replaced version the store lacks: their backup is kept from pruning
        self.unpushed = set(unpushed)
        self.progress = progress
        self.state_dir = state_dir
        self.ops = ops
        self.stamp = _stamp()
        self.backup_dir = state_dir / "backups" / self.stamp
        self.created_dirs: list[str] = []
        #: missing folder (relative) -> the temp folder its new files are staged in
        self.staged: dict[str, str] = {}
        self._made: set[str] = set()
        self._umask = read_umask()
        self._kills = _per_file_kills()
        #: where the ops start in the journal on disk (None: not written yet)
        self._ops_at: int | None = None
        self._checked_dirs: set[str] = set()
        self._prefetch: Prefetch | None = None
        self._writers: WriterProcess | None = None

    def temp(self, index: int) -> str | None:
        """Where op `index` stages its new content (None: a delete stages nothing).

        Made from the op's index each time it is needed, never held: 100,000 paths of
        ~130 bytes were the biggest part of a pull's ops (issue 22).
        """
        op = self.ops[index]
        if op.action != "write":
            return None
        if op.folder is not None:
            return self.staged[op.folder] + op.rel[len(op.folder):]
        return os.path.join(self.root, os.path.dirname(op.rel),
                            f"{TEMP_PREFIX}{self.stamp}-{index}")

    def _journal(self, phase: str) -> None:
        """Write the journal for `phase`; its ops (the bulk, the same in both phases) last.

        The ops are encoded in batches as they are written, never held whole (30 MB of
        text and 100,000 dicts at once on a pull of 100,000 files); the second phase copies
        them from the first phase's journal instead of encoding them again.
        """
        data = {"v": 1, "phase": phase, "stamp": self.stamp, "backup_dir": str(self.backup_dir),
                "created_dirs": self.created_dirs, "staged": self.staged}
        head = f'{json.dumps(data)[:-1]}, "ops": '.encode()
        path = self.state_dir / JOURNAL
        ops = _encoded_ops(self.ops, self.temp) if self._ops_at is None \
            else _tail(path, self._ops_at)
        write_atomic(path, itertools.chain((head,), ops))
        self._ops_at = len(head)

    def run(self, new_state: LocalState) -> None:
        """Install every op and save `new_state`, or roll back and re-raise."""
        from roam_core.tiers.cron_lock import holding

        # A cron jobs file is installed (and rolled back) under Hermes's own cron lock; a
        # lock another process keeps fails here, before the journal or anything is written.
        with holding(self.root, ops_paths(self.ops)):
            self._run(new_state)

    def _name_staged(self) -> None:
        """Find the missing folders the new files arrive in (staged whole), name backups."""
        root = str(self.root)
        # a file this install deletes is no folder in the way: it is gone before any write
        missing: set[str] = {op.rel for op in self.ops if op.action == "delete"}
        # the folder's own string, not a copy per file: `_missing_folder` makes a new one
        folders: dict[str, str] = {}
        # each file's folder asked once: its files share the answer (a walk of the path per
        # file was ~0.1 s at 100,000 files, before the journal and the first file)
        answers: dict[str, str | None] = {}
        for index, op in enumerate(self.ops):
            folder = None
            if op.action == "write" and op.expect is None:
                parent = op.rel.rpartition("/")[0]
                if parent in answers:
                    folder = answers[parent]
                else:
                    folder = answers[parent] = _missing_folder(root, op.rel, self._checked_dirs,
                                                               missing)
            if folder is not None:
                # a folder that is not there yet is staged whole under a temp name and
                # renamed into place once: its files never need a rename of their own
                if folder not in self.staged:
                    self.staged[folder] = os.path.join(
                        root, os.path.dirname(folder), f"{TEMP_PREFIX}{self.stamp}-d{index}")
                op.folder = folders.setdefault(folder, folder)
            if op.expect is not None:
                op.backup = str(self.backup_dir / op.rel)

    def _run(self, new_state: LocalState) -> None:
        ensure_private_dir(self.state_dir)
        self._name_staged()
        try:  # a failed journal write is rolled back like any other step
            # the store's reads and the writer process start first: they change nothing in
            # the home, and the journal's write is a second of its own at 100,000 files
            self._start_staging()
            self._journal("staging")
            kill_point("journal:staged")
            self._stage()
            self._keep_unpushed()
            syncfs(self.root)
            kill_point("journal:synced")
            self._journal("installing")
            placed: set[str] = set()
            # deletes first: a file that becomes a folder, or a folder that becomes a file,
            # needs the old shape gone before the new one can take its place
            deletes = [index for index, op in enumerate(self.ops) if op.action == "delete"]
            order = itertools.chain(deletes, (index for index, op in enumerate(self.ops)
                                              if op.action != "delete"))
            for number, index in enumerate(order):
                op = self.ops[index]
                if number == len(deletes):
                    self._prune_emptied(self.ops)
                if op.folder is None:
                    self._apply(op, self.temp(index))
                elif op.folder not in placed:
                    self._place(op.folder)
                    placed.add(op.folder)
                if self._kills:
                    kill_point(f"journal:op:{number}")
            if len(deletes) == len(self.ops):
                self._prune_emptied(self.ops)
            syncfs(self.root)
            kill_point("journal:installed")
            # the commit point: the state naming this install is committed (one transaction)
            new_state.install = self.stamp
            save_state(self.state_dir, new_state)
        except BaseException as error:
            self._stop_staging()  # every temp sent is on disk before the rollback looks
            if _committed(self.state_dir, self.stamp):
                raise  # complete; the journal left behind is removed by the next command
            problems = rollback(self.root, self.state_dir, self._loaded())
            (self.state_dir / JOURNAL).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise UserError("install failed and was rolled back: "
                                f"{describe_os_error(error)}"
                                + (f"; {problems}" if problems else "")) from None
            raise
        kill_point("journal:committed")
        (self.state_dir / JOURNAL).unlink(missing_ok=True)
        kill_point("journal:done")

    def settled(self) -> bool:
        """After an interrupt: whether the install had committed (its journal is then removed)."""
        if not _committed(self.state_dir, self.stamp):
            return False
        (self.state_dir / JOURNAL).unlink(missing_ok=True)
        return True

    def _loaded(self) -> dict[str, Any]:
        try:
            phase = json.loads((self.state_dir / JOURNAL).read_text())["phase"]
        except (OSError, ValueError, KeyError):
            phase = "installing"
        return {"phase": phase,
                "ops": [op.as_json(self.temp(index)) for index, op in enumerate(self.ops)],
                "created_dirs": self.created_dirs, "backup_dir": str(self.backup_dir),
                "staged": self.staged}

    def _keep_unpushed(self) -> None:
        """Mark the backup as the only copy of versions never pushed, before any is replaced."""
        kept = {op.rel: op.original_sha for op in self.ops
                if op.rel in self.unpushed and op.backup is not None}
        if kept:
            write_atomic(kept_marker(self.backup_dir),
                         json.dumps({"v": 1, "files": kept}, sort_keys=True).encode())

    def _start_staging(self) -> None:
        """Start reading the new contents ahead, and the writer process."""
        self._prefetch = Prefetch([op for op in self.ops if op.action == "write"])
        # with kill points armed each file is written before its point, as a test expects
        if not self._kills:
            try:
                self._writers = WriterProcess()
            except OSError:
                pass  # no interpreter to start (an embedding without one): written here

    def _stop_staging(self) -> None:
        """Stop reading ahead; let the writer process finish what it was sent (idempotent)."""
        prefetch, writers, self._prefetch, self._writers = \
            self._prefetch, self._writers, None, None
        try:
            if prefetch is not None:
                prefetch.close()
        finally:
            if writers is not None:
                writers.close()

    def _stage(self) -> None:
        prefetch, writers = self._prefetch, self._writers
        assert prefetch is not None
        try:
            for index, op in enumerate(self.ops):
                if op.expect is not None or op.action != "write":
                    _check_target(self.root, op)
                # a new file is not looked for: installing it fails if anything is there
                if op.action == "write":
                    if op.folder is None:
                        _safe_parent(self.root, op.rel, self.created_dirs, self._checked_dirs)
                    else:
                        self._staged_parent(op, writers)
                    written = self._write_temp(op, self.temp(index), prefetch.next_content(),
                                               writers)
                    if self.progress is not None:
                        self.progress.advance(written, files=1)
                if op.backup is not None:
                    backup = Path(op.backup)
                    backup.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(self.root / op.rel, backup, follow_symlinks=False)
                    if sha256_file(backup) != op.original_sha:
                        raise UserError(f"{op.rel} changed while installing; nothing was "
                                        "installed")
                if self._kills:
                    kill_point(f"journal:stage:{op.rel}")
            if writers is not None:
                writers.wait()
        finally:
            self._stop_staging()  # every temp sent is on disk before any rollback looks

    def _write_temp(self, op: Op, temp: str | None, content: Content,
                    writers: WriterProcess | None) -> int:
        """Write `op`'s temp file, or hand it whole to `writers` when it is small.

        Its content is checked against the op's digest before it is handed over: a file
        that does not match is never written.
        """
        assert temp is not None
        # created with its final mode when the umask leaves that intact (one call less)
        exact = op.mode & self._umask == 0
        create_mode, final_mode = (op.mode, None) if exact else (0o600, op.mode)
        chunks: list[bytes] = []
        held = 0
        streamed = iter(content.chunks())
        for chunk in streamed:
            chunks.append(chunk)
            held += len(chunk)
            if writers is None or held > SMALL_FILE:
                # large (or no writers): streamed into the file as it arrives
                rest = _then(chunks, streamed)
                written = write_file(temp, create_mode, final_mode, rest) if writers is None \
                    else writers.stream(temp, create_mode, final_mode, rest)
                break
        else:
            written = held
            if content.digest == op.sha256 and writers is not None:
                writers.add(temp, create_mode, final_mode, chunks)
                return written
            if content.digest == op.sha256:
                write_file(temp, create_mode, final_mode, chunks)
        if content.digest != op.sha256:
            raise UserError(f"content for {op.rel} did not match its digest; nothing "
                            "installed")
        return written

    def _staged_parent(self, op: Op, writers: WriterProcess | None) -> None:
        """Make the folders of a staged file inside its temp tree (ours: nothing to check).

        Named for a rollback before they are made; made by `writers` when there are some
        (in order: before the files it is sent for them).
        """
        assert op.folder is not None
        if op.rel.rpartition("/")[0] in self._made:
            return  # its folder is made (most files: one look, not a walk of its path)
        inner = op.rel[len(op.folder):].split("/")[1:-1]
        for depth in range(len(inner) + 1):
            rel = "/".join([op.folder, *inner[:depth]])
            if rel not in self._made:
                self._made.add(rel)
                self.created_dirs.append(rel)  # by its final name, for a rollback
                path = self.staged[op.folder] + rel[len(op.folder):]
                if writers is None:
                    os.mkdir(path, 0o755)
                else:
                    writers.mkdir(path)

    def _prune_emptied(self, ops: list[Op]) -> None:
        """Remove the folders this install's deletes left empty (a renamed folder's old name).

        Only empty folders go (`rmdir` refuses anything else), never a top-level folder or
        a profile's home unless a new file takes its name; a rollback recreates what a
        restored file needs.
        """
        targets = {op.rel for op in ops if op.action == "write"}
        # a file arriving in a folder staged whole cannot find a folder at its place
        for target in (op.rel for op in ops if op.action == "write" and op.folder is None
                       and op.expect is None):
            path = os.path.join(self.root, target)
            if os.path.isdir(path) and not os.path.islink(path):
                # a folder becoming a file: the empty folders left in it (never synced) go
                _remove_folders(Path(path))
        for op in ops:
            if op.action != "delete":
                continue
            parts = op.rel.split("/")[:-1]
            while parts:
                folder = "/".join(parts)
                keeper = len(parts) == 1 or (len(parts) == 2 and parts[0] == "profiles")
                if keeper and folder not in targets:
                    break
                try:
                    os.rmdir(os.path.join(self.root, folder))
                except OSError:
                    break  # holds something (local or still to come): kept
                parts.pop()

    def _place(self, folder: str) -> None:
        try:
            rename_noreplace(self.staged[folder], os.path.join(self.root, folder))
        except FileExistsError:
            raise UserError(f"{folder} changed while installing (it appeared); nothing was "
                            "installed") from None

    def _apply(self, op: Op, temp: str | None) -> None:
        target = os.path.join(self.root, op.rel)
        if op.action == "write" and op.expect is None:
            assert temp is not None
            try:
                rename_noreplace(temp, target)
            except FileExistsError:
                raise UserError(f"{op.rel} changed while installing (it appeared); nothing "
                                "was installed") from None
            return
        _check_target(self.root, op)
        if op.action == "write":
            assert temp is not None
            os.replace(temp, target)
        else:
            os.unlink(target)


def rollback(root: Path, state_dir: Path, journal: dict[str, Any]) -> str:
    """Undo an unfinished install; returns a note about anything that could not be undone."""
    unrecoverable: list[str] = []
    staging = journal.get("phase") == "staging"
    ops = journal.get("ops", [])
    for op in ops:
        if op.get("temp"):
            with contextlib.suppress(OSError):
                Path(op["temp"]).unlink()
    # New files and folders go first: an original may need their place back (a folder
    # that had become a file, or the reverse).
    for op in ([] if staging else ops):  # staging renamed and deleted nothing yet
        target = root / str(op["rel"])
        if op.get("had_original"):
            continue
        current = sha256_file(target)
        if current is not None and current == op.get("sha256"):
            target.unlink()
        elif current is not None:
            unrecoverable.append(str(op["rel"]))
    for rel in reversed(journal.get("created_dirs", [])):
        with contextlib.suppress(OSError):
            (root / rel).rmdir()
    for staged in dict(journal.get("staged") or {}).values():
        _remove_folders(Path(staged))  # what was never placed: empty once temps are gone
    for op in ([] if staging else ops):
        rel = str(op["rel"])
        target = root / rel
        if not op.get("had_original") or sha256_file(target) == op.get("original_sha"):
            continue
        backup = Path(op["backup"]) if op.get("backup") else None
        if backup is not None and sha256_file(backup) == op.get("original_sha"):
            _restore(backup, target)
        else:
            unrecoverable.append(rel)
    if journal.get("backup_dir") and not unrecoverable:
        # every replaced version is back in the home: the backup is no longer its only copy
        kept_marker(Path(journal["backup_dir"])).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        syncfs(root)
    if unrecoverable:
        return ("could not prove these were restorable, left as they are: "
                + ", ".join(sorted(unrecoverable)))
    return ""


def _remove_folders(top: Path) -> None:
    """Remove `top` and the folders below it, deepest first; a file stops it (kept)."""
    for folder, _subfolders, _files in os.walk(top, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _missing_folder(root: str, rel: str, checked: set[str], missing: set[str]) -> str | None:
    """The topmost folder of `rel` that does not exist yet, or None when all do.

    Folders proven real directories join `checked`, which staging shares (each folder is
    looked at once per install); absent ones join `missing`. Anything else is refused.
    """
    for folder in _folders_of(rel):
        if folder in checked:
            continue
        if folder in missing or not _is_folder(root, folder, rel):
            missing.add(folder)
            return folder
        checked.add(folder)
    return None


def _committed(state_dir: Path, stamp: object) -> bool:
    """Whether the state already names the install `stamp` (it is then complete)."""
    try:
        state = load_state(state_dir)
    except RoamError:
        return False
    return state is not None and stamp is not None and state.install == stamp


def _restore(backup: Path, target: Path) -> None:
    temp = target.with_name(f"{TEMP_PREFIX}restore-{target.name}"[:255])
    target.parent.mkdir(parents=True, exist_ok=True)  # its folder may have been emptied away
    shutil.copy2(backup, temp, follow_symlinks=False)
    os.replace(temp, target)
    fsync_dir(target.parent)


def recover_home(session: Session) -> str | None:
    """Finish what a crashed install left: roll back, or forward if it had committed.

    Returns:
        The one-line notice saying what was recovered (the face shows it), or None when
        there was no unfinished install.
    """
    path = session.state_dir / JOURNAL
    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        raise RoamError(f"{path} is damaged; inspect it and roam/backups/ by hand") from None
    count = len(journal.get("ops", []))
    if _committed(session.state_dir, journal.get("stamp")):
        path.unlink()
        return f"recovered: finished an interrupted install of {count} file(s)"
    from roam_core.tiers.cron_lock import holding

    with holding(session.root, [str(op.get("rel")) for op in journal.get("ops", [])]):
        problems = rollback(session.root, session.state_dir, journal)
    path.unlink()
    message = f"recovered: rolled back an unfinished install of {count} file(s)"
    if journal.get("backup_dir"):
        message += f" (backups kept in {journal['backup_dir']})"
    return message + (f"; {problems}" if problems else "")


def kept_marker(backup_dir: Path) -> Path:
    """The file beside a backup folder naming the versions only it holds (never pruned)."""
    return backup_dir.with_name(backup_dir.name + KEPT_SUFFIX)


def prune_backups(state_dir: Path, keep: int) -> None:
    """Keep only the newest `keep` backup folders, and every one holding a never-pushed version.

    Those stay until the user drops them (`roam backups drop`).
    """
    folder = state_dir / "backups"
    if not folder.is_dir():
        return
    stamps = sorted((p for p in folder.iterdir()
                     if p.is_dir() and not kept_marker(p).exists()), key=lambda p: p.name)
    for old in stamps[: max(0, len(stamps) - max(keep, 1))]:
        shutil.rmtree(old, ignore_errors=True)


def ops_paths(ops: Iterable[Op]) -> list[str]:
    return [op.rel for op in ops]
