"""Defect 1 of issue 13: every pattern linear-time, a per-document deadline that
quarantines instead of hanging, and no process-wide lock one slow document holds."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from ragline.scanning import secret_patterns
from ragline.scanning.adversarial import ADVERSARIAL, adversarial_inputs
from ragline.scanning.engine import Detectors, EngineConfig
from ragline.scanning.model import DetectPlan
from ragline.scanning.policy import PolicySet
from ragline.scanning.runner import DetectionRunner
from ragline.scanning.scanner import ScanDeadlineConfig, Scanner, ScanTimeout

from .helpers import make_event

try:  # Python 3.11+ keeps the parser private
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def _nested_unbounded(tree: Any, inside_repeat: bool = False) -> list[str]:
    """Repeats inside an unbounded repeat: the shape that backtracks polynomially."""
    bad: list[str] = []
    for op, av in tree:
        name = str(op)
        if name in _REPEATS:
            lo, hi, sub = av
            if inside_repeat:
                bad.append(f"{name}{{{lo},{hi}}}")
            unbounded = hi == sre_parse.MAXREPEAT
            bad += _nested_unbounded(sub, inside_repeat or unbounded)
        elif name == "SUBPATTERN":
            bad += _nested_unbounded(av[-1], inside_repeat)
        elif name == "BRANCH":
            for alt in av[1]:
                bad += _nested_unbounded(alt, inside_repeat)
        elif name in ("ASSERT", "ASSERT_NOT"):
            bad += _nested_unbounded(av[1], inside_repeat)
    return bad


def _all_regexes() -> list[re.Pattern[str]]:
    extra = [secret_patterns._BEGIN, secret_patterns._END, secret_patterns._KEY_LINE,
             secret_patterns._B64_RUN]  # fmt: skip
    return [p.regex for p in secret_patterns.PATTERNS] + extra


@pytest.mark.parametrize("rx", _all_regexes(), ids=lambda r: r.pattern[:40])
def test_no_pattern_nests_a_repeat_in_an_unbounded_repeat(rx: re.Pattern[str]) -> None:
    """``(?:[a-z0-9]+[_.-])*password`` (the old prefix) is the shape that made
    ``"token\\n" + "a-" * n`` quadratic: any repeat inside an unbounded one is refused."""
    assert _nested_unbounded(sre_parse.parse(rx.pattern, rx.flags)) == []


@pytest.fixture(scope="module")
def plan() -> DetectPlan:
    from ragline.events import Classification, TrustLevel
    from ragline.scanning.policy import PolicyContext

    ctx = PolicyContext(
        tenant_id="t", source="s", source_type="wiki",
        classification=Classification.INTERNAL, trust=TrustLevel.MEDIUM,
    )  # fmt: skip
    return PolicySet.default().resolve(ctx).plan()


@pytest.mark.timeout(300)
def test_issue_input_finishes_at_a_size_the_old_patterns_never_did(
    detectors: Detectors, plan: DetectPlan
) -> None:
    """The issue's input took 17 s at 32 KB (quadratic: hours at 1 MB). At 400 KB the old
    patterns would need ~40 minutes; the test's own timeout fails it on such code."""
    text = ADVERSARIAL["keyword_then_dash_run"](400_000, None)  # type: ignore[arg-type]
    res = detectors.detect([text], plan, deadline=time.monotonic() + 240)
    assert not res.timed_out


@pytest.mark.timeout(600)
def test_every_adversarial_class_completes_within_the_deadline(
    detectors: Detectors, plan: DetectPlan
) -> None:
    """Each pathological class at 60 KB finishes (the deadline is a generous guard, not a
    timing assertion: a polynomial pattern at this size takes minutes)."""
    late = [
        name
        for name, text in adversarial_inputs(60_000).items()
        if detectors.detect([text], plan, deadline=time.monotonic() + 120).timed_out
    ]
    assert late == []


def test_a_passed_deadline_stops_detection(detectors: Detectors, plan: DetectPlan) -> None:
    res = detectors.detect(["password = Hq7vR2kP9zXy"], plan, deadline=time.monotonic() - 1)
    assert res.timed_out and res.findings == []


async def test_deadline_quarantines_with_reason_and_no_free_text(
    make_scanner: Callable[..., Scanner],
) -> None:
    scanner = make_scanner(deadline=ScanDeadlineConfig(base_s=1e-9, per_mb_s=0, max_s=1e-9))
    ev = make_event(
        ["x " * 1000], title="AKIAPTGZ4JFEBZ9SDO78", uri="https://h/AKIAPTGZ4JFEBZ9SDO78"
    )
    with pytest.raises(ScanTimeout) as info:
        await scanner.scan(ev)
    assert info.value.reason_code == "scan_timeout"
    assert "AKIA" not in info.value.meta.model_dump_json()
    assert info.value.meta.acl_groups == ev.meta.acl_groups


async def test_runner_stops_waiting_for_a_stuck_detector(detectors: Detectors) -> None:
    """A detector stuck in one library call (no cooperative check) still ends in a
    timed-out result after deadline + grace instead of holding the stage."""
    gate = threading.Event()

    class Stuck(Detectors):
        def detect(self, items: Any, plan: Any, *, deadline: float | None = None) -> Any:
            gate.wait(30)
            return super().detect(items, plan, deadline=deadline)

    stuck = Stuck(EngineConfig())
    stuck.secrets, stuck.pii, stuck._loaded = detectors.secrets, detectors.pii, True
    runner = DetectionRunner(EngineConfig(), detectors=stuck)
    try:
        res = await runner.detect(["text"], DetectPlan(), deadline_s=0.05, grace_s=0.05)
    finally:
        gate.set()
    assert res.timed_out


def test_no_process_wide_lock_between_documents(detectors: Detectors, plan: DetectPlan) -> None:
    """Document A is paused inside secret detection until document B has been fully
    detected in another thread. With one lock around all detection (the old engine) B
    waits for A and A waits for B: the 20 s gate expires and the test fails."""
    entered = threading.Event()
    b_done = threading.Event()
    real = detectors.secrets.detect

    def paused(layout: Any, *, deadline: float | None = None) -> Any:
        if "DOC-A" in layout.text:
            entered.set()
            assert b_done.wait(20), "document B was held behind document A"
        return real(layout, deadline=deadline)

    detectors.secrets.detect = paused  # type: ignore[method-assign]
    try:
        a = threading.Thread(target=lambda: detectors.detect(["DOC-A"], plan))
        a.start()
        assert entered.wait(20)
        detectors.detect(["DOC-B password = Hq7vR2kP9zXy"], plan)
        b_done.set()
        a.join(30)
    finally:
        detectors.secrets.detect = real  # type: ignore[method-assign]
    assert not a.is_alive()


def test_scanner_settings_deadline_defaults_stay_under_the_poll_interval() -> None:
    from ragline.scanning.settings import ScannerSettings

    cfg = ScannerSettings().deadline()
    assert cfg.seconds(0) == 30 and cfg.seconds(10**9) == cfg.max_s < 600
