"""Scanner test fixtures: one set of loaded detectors per session (presidio + spaCy are slow
to load) and scanners built around it. Builders live in helpers.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragline.scanning.engine import Detectors, EngineConfig
from ragline.scanning.policy import PolicySet
from ragline.scanning.runner import DetectionRunner
from ragline.scanning.scanner import Scanner


@pytest.fixture(scope="session")
def detectors() -> Detectors:
    d = Detectors(EngineConfig())
    d.load()
    return d


@pytest.fixture(scope="session")
def make_scanner(detectors: Detectors) -> Callable[..., Scanner]:
    def make(policies: PolicySet | None = None, **kw: Any) -> Scanner:
        runner = DetectionRunner(EngineConfig(), workers=0, detectors=detectors)
        return Scanner(policies=policies or PolicySet.default(), runner=runner, **kw)

    return make
