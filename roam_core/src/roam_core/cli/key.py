"""`roam key rotate`: move the fleet's store to a new archive key, history included."""

from __future__ import annotations

import argparse
import sys

from roam_core.cli.common import operation
from roam_core.cli.output import emit_json, note
from roam_core.cli.progress import Progress
from roam_core.cli.sync import _size

NEW_KEY_ENV = "ROAM_NEW_ARCHIVE_KEY"
#: Exit code of an invocation that stopped before the deadline with work left (sysexits'
#: EX_TEMPFAIL): run it again and it continues.
EX_PAUSED = 75


def _new_key(args: argparse.Namespace, root: object) -> tuple[bytes, str | None]:
    """The new key's bytes, and its text when this run made it (to be shown once)."""
    from roam_core import crypto, secrets
    from roam_core.errors import ArchiveKeyError, UserError

    given = secrets.get_secret(NEW_KEY_ENV, root)  # type: ignore[arg-type]
    if args.generate:
        if given:
            raise UserError(f"{NEW_KEY_ENV} is set and --generate asks for a new key; "
                            "give one or the other")
        import secrets as random_tokens

        text = random_tokens.token_urlsafe(32)
        return crypto.parse_key(text), text
    if not given:
        raise UserError(f"{NEW_KEY_ENV} is not set; set it to the new key, or let roam make "
                        "one with --generate")
    try:
        return crypto.parse_key(given), None
    except ArchiveKeyError as failure:
        raise ArchiveKeyError(str(failure).replace(crypto.KEY_ENV, NEW_KEY_ENV)) from None


def _rotate(args: argparse.Namespace) -> int:
    from roam_core.engine.rotate import rotate

    with operation(args, "key rotate") as session:
        session.require_state()
        key, made = _new_key(args, session.root)
        if made is not None:
            # shown before any work: a run that is killed must not lose the only copy
            target = sys.stderr if args.json else sys.stdout
            print(f"new archive key (shown once; keep it safe, then set ROAM_ARCHIVE_KEY to "
                  f"it on every device): {made}", file=target, flush=True)
        progress = Progress("rotate", quiet=args.quiet or args.json)
        try:
            result = rotate(session, key, progress)
        finally:
            progress.close()
    if args.json:
        emit_json({**result.as_json(), **({"new_key": made} if made else {})})
    else:
        for line in result.notes:
            note(line)
        if result.already:
            print(f"the store already uses the new key (fingerprint {result.fingerprint}); "
                  "nothing to rotate")
        elif result.complete:
            print(f"rotated generation {result.generation} and its history to the new key "
                  f"(fingerprint {result.fingerprint}): {result.blobs} blob(s), "
                  f"{_size(result.bytes)} re-sealed, {result.snapshots} generation(s), "
                  f"{result.deleted} old object(s) deleted")
            if not args.quiet:
                print("next: set ROAM_ARCHIVE_KEY to the new key on this and every other "
                      "device; rotate the storage credentials too if a device was lost "
                      "(docs/security.md)")
        else:
            print(f"rotation paused: {result.indexes} index(es) and {result.snapshots} "
                  "generation(s) re-sealed this run; run roam key rotate again to continue")
    return 0 if result.complete else EX_PAUSED


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("key", help="manage the fleet's archive key (rotate it)")
    verbs = parser.add_subparsers(dest="verb", metavar="rotate", required=True)
    rotating = verbs.add_parser(
        "rotate", help="re-seal the whole store, history included, under a new archive key",
        description="Re-seal every object of the store under a new archive key, keeping "
        "every generation, then publish HEAD under it and delete what the old key opens "
        "(but one tombstone telling old-key devices that the key was rotated). The new key "
        f"comes from {NEW_KEY_ENV}, or --generate makes one and prints it once. Resumable: "
        "a killed or paused run continues when run again with the same two keys (exit "
        f"{EX_PAUSED} means paused before the deadline, run it again). Needs a backend "
        "that can delete objects.")
    rotating.add_argument("--generate", action="store_true",
                          help="make the new key and print it once (instead of "
                          f"{NEW_KEY_ENV})")
    rotating.add_argument("--json", action="store_true", help="print JSON")
    rotating.set_defaults(func=_rotate)
