"""Wire a ``Scanner`` from settings: policies, detection runner, limits."""

from __future__ import annotations

from ragline.scanning.runner import DetectionRunner
from ragline.scanning.scanner import Scanner
from ragline.scanning.settings import ScannerSettings

__all__ = ["build_scanner"]


def build_scanner(settings: ScannerSettings) -> Scanner:
    """Nothing is loaded here; ``await scanner.start()`` loads the engines once."""
    s = settings
    policies = s.policies()
    runner = DetectionRunner(
        s.engine_config(preload_ner=policies.may_need_ner()),
        workers=s.workers,
        split_bytes=s.split_bytes,
    )
    return Scanner(
        policies=policies,
        runner=runner,
        max_positions=s.max_positions,
        propagate_min_chars=s.propagate_min_chars,
        deadline=s.deadline(),
    )
