"""How long `hermes chat -q` lives after its turn ends, with Discord fine, down, hung, 429.

A real Hermes 0.19 (the tests' cached environment, tests/support/hermes_env.py) against the
tests' stub model, mirroring to the Discord-shaped server (tests/support/discord_server.py).
Per mode, `--runs` turns; each sample is the wall time from Hermes's "Turn ended:" log line
to the process's exit, and the moment roam's sender let the exit go (its own log line,
seconds after the turn). Medians go into docs/benchmarks.md, in a block the main harness
keeps when it rewrites the page::

    python3 -m uv run --all-packages python bench/mirror_exit.py [--runs 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.discord_server import DiscordServer  # noqa: E402
from support.exit_timing import exit_delay, exit_holds  # noqa: E402
from support.hermes_env import HermesHome, HomeFactory, ensure_hermes_venv  # noqa: E402
from support.stub_model import StubModel  # noqa: E402

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.bench-token-not-real-0123456789"
CHANNEL = "100000000000000001"
BEGIN, END = "<!-- kept:mirror-exit -->", "<!-- /kept:mirror-exit -->"


def _modes(server: DiscordServer) -> dict[str, tuple[str, Callable[[], None]]]:
    """Mode name → (what Discord does, how to make the server do it)."""

    def fine() -> None:
        server.down = False

    def down() -> None:
        server.down = True  # every connection closed without an answer

    def hung() -> None:
        server.late(600, count=10_000)

    def limited() -> None:
        server.inject(429, count=10_000, retry_after=5, global_=True)

    return {"off": ("mirror off (Hermes alone)", fine), "fine": ("Discord answering", fine),
            "down": ("Discord down (connections dropped)", down),
            "hung": ("Discord hung (no answer)", hung),
            "429": ("Discord rate-limiting (global 429, retry_after 5 s)", limited)}


def _configure(home: HermesHome, server: DiscordServer, on: bool) -> None:
    home.set_roam_settings(mirror_sinks=["discord"] if on else [], discord_channel_id=CHANNEL,
                           discord_api_base=server.api_base)


def measure(runs: int) -> list[tuple[str, float, float | None]]:
    """(mode description, median turn-end → exit, median roam let-go) per mode."""
    venv = ensure_hermes_venv()
    rows = []
    with StubModel() as stub, DiscordServer(token=TOKEN, channels={CHANNEL}) as server, \
            tempfile.TemporaryDirectory(prefix="roam-bench-exit-") as work:
        factory = HomeFactory(venv, stub, Path(work))
        for name, (label, arrange) in _modes(server).items():
            home = factory.new(f"exit-{name}")
            home.write_dotenv(ROAM_DISCORD_BOT_TOKEN=TOKEN)
            _configure(home, server, on=name != "off")
            arrange()
            delays = [exit_delay(home, f"bench turn {name} {n}") for n in range(runs)]
            holds = exit_holds(home)
            server.lates.clear()
            server.faults.clear()
            server.down = False
            rows.append((label, statistics.median(delays),
                         statistics.median(holds) if holds else None))
            print(f"{label}: exit {statistics.median(delays):.2f} s after the turn "
                  f"(samples {', '.join(f'{d:.2f}' for d in delays)})", flush=True)
    return rows


def block(rows: list[tuple[str, float, float | None]], runs: int) -> str:
    lines = [BEGIN, "", "## Session mirror: turn end to process exit", "",
             f"`hermes chat -q` with a real Hermes 0.19, {runs} turn(s) per mode, medians "
             "(`python bench/mirror_exit.py`). *Exit* is the wall time from Hermes's \"Turn "
             "ended\" log line to the process's exit, most of it Hermes's own shutdown (see "
             "the mirror-off row); *roam let go* is when roam's sender released the exit, "
             "after the turn (bound: 0.4 s; unsent turns stay spooled).", "",
             "| Discord | exit after turn (s) | roam let go after turn (s) |", "|---|---|---|"]
    for label, delay, hold in rows:
        lines.append(f"| {label} | {delay:.2f} | {'-' if hold is None else f'{hold:.2f}'} |")
    return "\n".join([*lines, "", END])


def write(path: Path, text: str) -> None:
    """Replace the kept block in `path` (or append it)."""
    page = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    page = pattern.sub(lambda _m: text, page) if pattern.search(page) else \
        page.rstrip("\n") + "\n\n" + text
    path.write_text(page.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="turns per mode (default 5)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md",
                        help="the Markdown page to update (default docs/benchmarks.md)")
    args = parser.parse_args()
    rows = measure(args.runs)
    write(args.out, block(rows, args.runs))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
