"""Forget and prune on the large home (issue 23's "Done means").

    python bench/prune_shrink.py [--home large] [--generations 50] [--edits 20] [--keep 5]

Generates the benchmark's synthetic home (bench/homes.py), pushes it to a local store, then
pushes `--generations` more generations, each editing `--edits` shared files (new random
text of a similar size). Then `roam forget --keep-last K --apply` and `roam prune --apply
--grace-minutes 0` (one device: nothing pushes meanwhile). It prints the store's pack bytes
before and after, the bytes a fresh push of the kept generations would store (their distinct
blobs, sealed: `roam stats`' referenced bytes, since a pack is its sealed blobs back to back
and sealing is size-deterministic), the ratio, and whether `roam check --read-data` (every
blob of every kept generation read back and verified) is clean.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homes import SPECS, local_home


def _pack_bytes(store: Path) -> int:
    return sum(path.stat().st_size for path in store.rglob("*")
               if path.is_file() and "packs" in path.relative_to(store).parts)


def _store_bytes(store: Path) -> int:
    return sum(path.stat().st_size for path in store.rglob("*") if path.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", choices=sorted(SPECS), default="large")
    parser.add_argument("--generations", type=int, default=50)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--keep", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="roam-prune-shrink-"))
    home, env, roam = local_home(work, args.home)
    store = work / "store"

    def run(*words: str) -> str:
        done = subprocess.run([*roam, *words], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"roam {' '.join(words)} failed: {done.stderr.strip()[-500:]}")
        return done.stdout

    run("init")
    started = time.perf_counter()
    run("push")
    first = time.perf_counter() - started
    rng = random.Random(23)
    editable = sorted(path for folder in ("skills", "memories") for path in
                      (home / folder).rglob("*.md") if path.is_file())
    started = time.perf_counter()
    for _generation in range(args.generations):
        for path in rng.sample(editable, min(args.edits, len(editable))):
            size = max(64, path.stat().st_size)
            path.write_bytes(rng.randbytes(size // 2).hex().encode()[:size])
        run("push")
    edits = time.perf_counter() - started
    before_packs, before_store = _pack_bytes(store), _store_bytes(store)
    started = time.perf_counter()
    run("forget", "--keep-last", str(args.keep), "--apply")
    pruned = json.loads(run("prune", "--apply", "--grace-minutes", "0", "--json"))
    took = time.perf_counter() - started
    stats = json.loads(run("stats", "--json"))
    after_packs, after_store = _pack_bytes(store), _store_bytes(store)
    fresh = stats["referenced_bytes"]
    check = subprocess.run([*roam, "check", "--read-data"], env=env, capture_output=True,
                           text=True)
    print(f"home {args.home}: first push {first:.0f} s; {args.generations} generations of "
          f"{args.edits} edited files in {edits:.0f} s")
    print(f"packs before: {before_packs / 1e6:.1f} MB (store {before_store / 1e6:.1f} MB)")
    print(f"forget --keep-last {args.keep} + prune --apply: {took:.1f} s, deleted "
          f"{pruned['deleted']}")
    print(f"packs after:  {after_packs / 1e6:.1f} MB (store {after_store / 1e6:.1f} MB)")
    print(f"fresh push of the kept generations: {fresh / 1e6:.1f} MB of packs; after/fresh = "
          f"{after_packs / fresh:.3f}")
    print(f"kept generations: {stats['generations']}; check --read-data: "
          f"{'clean' if check.returncode == 0 else 'FAILED: ' + check.stdout[-500:]}")
    return 0 if check.returncode == 0 and after_packs <= 1.10 * fresh else 1


if __name__ == "__main__":
    raise SystemExit(main())
