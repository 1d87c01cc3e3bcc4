from __future__ import annotations

import sys
from pathlib import Path

# the engine tests' fleet helpers (Device, keys, settings) drive homes here too
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engine"))
