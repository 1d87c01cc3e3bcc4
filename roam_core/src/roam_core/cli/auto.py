"""`roam auto on|off|status`: the automatic sync switches, from a terminal only.

`on` and `off` set both `auto_push` and `auto_pull_shared` in the root config.yaml
(`plugins.entries.roam.settings`). Only this terminal verb switches them: the `/roam auto`
chat form is read-only and no agent tool can change them. They act inside Hermes (the
plugin's session hooks); the standalone `roam` never syncs on its own.
"""

from __future__ import annotations

import argparse
import time

from roam_core.cli.output import emit_json
from roam_core.errors import UserError
from roam_core.home import resolve_home


def _ago(stamp: object) -> str:
    if not isinstance(stamp, (int, float)) or not stamp:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _run(args: argparse.Namespace) -> int:
    from roam_core.service import autostate
    from roam_core.service.views import auto_status

    home = resolve_home(args.home)
    if args.switch in ("on", "off"):
        if home.profile != "default":
            raise UserError(f"auto sync is switched for the whole home: run it from the root "
                            f"home ({home.root}), not the profile '{home.profile}'")
        if not autostate.initialized(home.root):
            raise UserError("roam is not set up in this home yet: run `roam init` first")
        value = args.switch == "on"
        autostate.write_switches(home.root, {name: value for name in autostate.SWITCHES})
    report = auto_status(home.root).as_json()
    if getattr(args, "json", False):
        emit_json(report)
        return 0
    if args.switch in ("on", "off"):
        print(f"auto sync {args.switch}: push after turns and pull of skills/memories/SOUL.md "
              f"at session start are {'enabled' if args.switch == 'on' else 'disabled'}")
        return 0

    def onoff(value: object) -> str:
        return "on" if value else "off"

    print(f"auto push: {onoff(report['auto_push'])} "
          f"(debounce {report['push_debounce_seconds']} s)")
    print(f"auto pull of shared files: {onoff(report['auto_pull_shared'])}")
    print(f"last automatic push: {_ago(report['last_auto_push'])}")
    if report["pending_failed_push"]:
        print(f"last automatic push failed: {report['pending_failed_push']}")
    if not report["initialized"]:
        print("roam is not set up in this home yet (roam init)")
    for line in (report.get("hermes_problem"), report.get("hermes_version_note")):
        if line:
            print(f"warning: {line}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "auto", help="switch automatic sync inside Hermes on or off, or show it",
        description="Automatic sync inside Hermes: push after turns (debounced) and pull "
                    "skills/, memories/ and SOUL.md when a session starts. Terminal only.")
    verbs = parser.add_subparsers(dest="switch", required=True, metavar="on|off|status")
    for name, help_text in (("on", "turn automatic push and shared pull on"),
                            ("off", "turn them off"), ("status", "show the switches")):
        verb = verbs.add_parser(name, help=help_text, description=help_text)
        verb.add_argument("--json", action="store_true", help="print JSON")
        verb.set_defaults(func=_run)
