"""Per-stage profile of a running pipeline (bench helper, issue 29).

Samples every service's ``/metrics`` and the broker's consumer-group offsets every few
seconds while a load runs, then says where each stage's consumers spent the window, per
lane: the runtime's ``ragline_stage_seconds_total`` phases (``handle``: the stage's own
work; ``produce``: awaiting the broker's acknowledgement of its outputs; ``commit``: the
offset commit; ``gate``: a bulk poll yielding to interactive work; ``idle``: between
polls, i.e. fetching or nothing upstream), records and polls handled, the consumer
lag of each stage over time (read from the broker, ``runtime/lag.py``), and the CPU
seconds of every process of the stack (each service's process tree, the Kafka and
OpenSearch JVMs, Postgres): on a shared machine CPU seconds per document say where the
cores go whatever the load, where wall-clock shares only say who waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from ragline.config import Settings
from ragline.platform.stack.testing import ServiceProcess
from ragline.runtime.lag import stage_lag

__all__ = ["StageProfiler", "parse_metrics"]

_LINE = re.compile(r"^(\w+)\{([^}]*)\}\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
PHASES = ("handle", "produce", "commit", "gate", "idle")


Key = tuple[str, tuple[tuple[str, str], ...]]


def key(metric: str, **labels: str) -> Key:
    """A sample's key: its name and its labels, sorted by label name (the exposition
    format sorts them so; the order the metric declares them in is not kept)."""
    return (metric, tuple(sorted(labels.items())))


def parse_metrics(text: str, names: tuple[str, ...]) -> dict[Key, float]:
    """``{key(metric, **labels): value}`` of the labelled samples named."""
    out: dict[Key, float] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None or m.group(1) not in names:
            continue
        out[key(m.group(1), **dict(_LABEL.findall(m.group(2))))] = float(m.group(3))
    return out


_NAMES = (
    "ragline_stage_seconds_total",
    "ragline_lane_messages_total",
    "ragline_lane_batches_total",
)


def _tree_cpu(p: psutil.Process) -> float:
    """User + system seconds of ``p``, its live descendants and its reaped children."""
    total = 0.0
    for q in [p, *p.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = q.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def stack_cpu(procs: dict[str, ServiceProcess], state_dir: str) -> dict[str, float]:
    """CPU seconds so far of each service and of the engines started under ``state_dir``
    (found by their command lines: the JVMs name their config files, Postgres its data
    directory)."""
    out: dict[str, float] = {}
    for name, sp in procs.items():
        with contextlib.suppress(psutil.Error):
            out[name] = _tree_cpu(psutil.Process(sp.pid))
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if state_dir not in cmd:
            continue
        kind = (
            "kafka"
            if "kafka.Kafka" in cmd
            else "opensearch"
            if "Launcher" in cmd
            else "postgres"
            if "postgres" in cmd and " -D " in f" {cmd} "
            else None
        )
        if kind is not None:
            with contextlib.suppress(psutil.Error):
                out[kind] = out.get(kind, 0.0) + _tree_cpu(p)
    return out


@dataclass
class StageProfiler:
    settings: Settings
    procs: dict[str, ServiceProcess]
    interval_s: float = 5.0
    samples: list[dict[str, Any]] = field(default_factory=list)
    state_dir: str = field(default_factory=lambda: os.environ.get("RAGLINE_STATE_DIR", "/-"))

    def _scrape(self) -> dict[str, dict[Key, float]]:
        out = {}
        for name, p in self.procs.items():
            try:
                out[name] = parse_metrics(p.metrics(timeout_s=2.0), _NAMES)
            except OSError:
                continue
        return out

    async def sample(self) -> dict[str, Any]:
        t = time.perf_counter()
        metrics = await asyncio.to_thread(self._scrape)
        cpu = await asyncio.to_thread(stack_cpu, self.procs, self.state_dir)
        try:
            lags = {x.stage: x.total for x in await stage_lag(self.settings)}
        except Exception:  # a missed lag reading is a gap in the curve
            lags = {}
        s = {"t": t, "metrics": metrics, "lag": lags, "cpu": cpu}
        self.samples.append(s)
        return s

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)
        await self.sample()

    def summary(self, t0: float) -> dict[str, Any]:
        """Per stage and lane over [t0, last sample]: seconds per phase and their share of
        the window, records/s and records per poll; the lag curve (s since t0, lag)."""
        first = min(self.samples, key=lambda s: abs(s["t"] - t0))
        last = self.samples[-1]
        wall = last["t"] - first["t"]
        stages: dict[str, Any] = {}
        for name, now in last["metrics"].items():
            before = first["metrics"].get(name, {})

            def delta(k: Key, now=now, before=before) -> float:
                return now.get(k, 0.0) - before.get(k, 0.0)

            lanes: dict[str, Any] = {}
            for lane in ("interactive", "bulk"):
                secs = {
                    ph: delta(key("ragline_stage_seconds_total", stage=name, lane=lane, phase=ph))
                    for ph in PHASES
                }
                msgs = delta(key("ragline_lane_messages_total", stage=name, lane=lane))
                polls = delta(key("ragline_lane_batches_total", stage=name, lane=lane))
                if msgs == 0 and sum(secs.values()) == 0:
                    continue
                lanes[lane] = {
                    "records": int(msgs),
                    "polls": int(polls),
                    "records_per_s": round(msgs / wall, 2) if wall else 0.0,
                    "records_per_poll": round(msgs / polls, 1) if polls else 0.0,
                    "seconds": {k: round(v, 1) for k, v in secs.items()},
                    "share": {k: round(v / wall, 3) for k, v in secs.items()} if wall else {},
                    "produce_ms_per_poll": round(1000 * secs["produce"] / polls, 1)
                    if polls
                    else 0.0,
                    "commit_ms_per_poll": round(1000 * secs["commit"] / polls, 1) if polls else 0.0,
                }
            stages[name] = lanes
        lag = {
            stage: [
                (round(s["t"] - t0, 1), s["lag"][stage])
                for s in self.samples
                if stage in s["lag"] and s["t"] >= first["t"]
            ]
            for stage in last["lag"]
        }
        cpu = {
            k: round(v - first["cpu"].get(k, 0.0), 1)
            for k, v in sorted(last["cpu"].items(), key=lambda kv: -kv[1])
        }
        return {
            "window_s": round(wall, 1),
            "stages": stages,
            "lag": lag,
            "cpu_s": cpu,
            "cores_busy": round(sum(cpu.values()) / wall, 2) if wall else 0.0,
        }


def print_summary(summary: dict[str, Any]) -> None:
    print(f"per-stage profile over {summary['window_s']} s (share of the window per phase):")
    head = "  ".join(f"{p:>7s}" for p in PHASES)
    print(f"  {'stage':18s} {'lane':11s} {'rec/s':>7s} {'rec/poll':>8s}  {head}  prod/commit ms")
    for stage, lanes in summary["stages"].items():
        for lane, v in lanes.items():
            shares = "  ".join(f"{v['share'].get(p, 0):7.1%}" for p in PHASES)
            print(
                f"  {stage:18s} {lane:11s} {v['records_per_s']:7.2f} {v['records_per_poll']:8.1f}"
                f"  {shares}  {v['produce_ms_per_poll']:.1f}/{v['commit_ms_per_poll']:.1f}"
            )
    peaks = {k: max((n for _, n in xs), default=0) for k, xs in summary["lag"].items()}
    print(f"  peak consumer lag per stage: {peaks}")
    print(f"  CPU s over the window ({summary['cores_busy']} cores busy): {summary['cpu_s']}")
