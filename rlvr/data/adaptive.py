"""Adaptive domain weights (``mixture.mode=adaptive``): a UCB bandit over the domains.

Each domain is scored by where the policy still learns.

After DUMP (arXiv 2504.09710). Each generation batch reports, per domain, the sum of a learning
signal over its completions and how many completions there were: ``abs_advantage`` (mean
absolute advantage: zero for a group whose completions all scored alike, large where the
group disagrees) or ``active_groups`` (the share of completions with a non-zero advantage,
i.e. in a group whose rewards differ). For batch ``b`` the shares are a pure function of the
reports of batches ``b - lag - window + 1 .. b - lag``:

    mean_d = signal sum / completions of domain d over those reports (0 without any)
    ucb_d  = mean_d + exploration * sqrt(2 ln(max(N, 2)) / max(n_d, 1))
    share_d = floor + (1 - D * floor) * softmax(ucb / temperature)_d

where ``n_d`` counts domain d's completions in the window and ``N`` all of them. Before the
first report is due (``b < lag``) the shares are the initial weights (``domains.<d>.weight``).
The lag covers the batches drawn ahead of training (the DataLoader takes the next batch before
this one trains; asynchronous generation takes one more), so the shares never depend on when a
report happens to arrive: a run is deterministic given its seed, and resumes exactly from its
saved reports. A share is never below ``floor``, so no domain starves.

The floor alone does not stop forgetting: a domain the bandit pushes to it can lose what it
had (the embedded study's adaptive arm ended agent below the SFT model). So each report also
carries the domain's reward sum, and a domain whose mean reward over the window has fallen more
than ``guard_drop`` below its best window so far is guarded: its floor becomes its initial share
until its reward is back within ``guard_drop`` of that best. Guarded floors are read from the
same reports, so runs stay deterministic and resumable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SIGNALS: tuple[str, ...] = ("abs_advantage", "active_groups")


@dataclass(frozen=True)
class AdaptiveSettings:
    """The bandit's knobs (``mixture.adaptive``); ``check`` names the fix for a bad value."""

    signal: str = "abs_advantage"
    exploration: float = 1.0  # UCB bonus coefficient; 0: follow the signal alone
    temperature: float = 0.1  # softmax temperature over the UCB scores
    floor: float = 0.05  # least share of every domain
    window: int = 8  # batches of reports the score reads (the most recent ones)
    lag: int = 3  # batches between a report and the first batch it steers
    guard_drop: float = 0.05  # windowed mean reward this far below its best guards a domain (0: off)

    def check(self, n_domains: int) -> None:
        problems = []
        if self.signal not in SIGNALS:
            problems.append(f"signal={self.signal!r} (choose {', '.join(SIGNALS)})")
        if self.exploration < 0:
            problems.append(f"exploration={self.exploration} (must be >= 0)")
        if self.temperature <= 0:
            problems.append(f"temperature={self.temperature} (must be > 0)")
        if not 0 <= self.floor * n_domains < 1:
            problems.append(f"floor={self.floor} (need 0 <= floor < 1/{n_domains} for {n_domains} domains)")
        if self.guard_drop < 0:
            problems.append(f"guard_drop={self.guard_drop} (must be >= 0; 0 turns the guard off)")
        if self.window < 1 or self.lag < 1:
            problems.append(f"window={self.window}, lag={self.lag} (both must be >= 1)")
        if problems:
            raise ValueError("mixture.adaptive: " + "; ".join(problems))

    def describe(self) -> str:
        return "|".join(f"{k}={v}" for k, v in asdict(self).items())


# domain -> (signal sum, completions[, reward sum]); a report without rewards guards nothing
Report = Mapping[str, tuple[float, int] | tuple[float, int, float]]


class AdaptiveWeights:
    """Domain shares per batch from the reports of earlier batches (see the module docstring)."""

    def __init__(self, domains: Sequence[str], initial: Sequence[float], settings: AdaptiveSettings) -> None:
        settings.check(len(domains))
        total = sum(initial)
        if len(initial) != len(domains) or min(initial, default=0) <= 0 or total <= 0:
            raise ValueError(
                f"mixture.mode=adaptive needs a positive initial weight for every domain "
                f"(domains.<name>.weight): {dict(zip(domains, initial, strict=False))}"
            )
        self.domains = list(domains)
        self.settings = settings
        self.initial = [w / total for w in initial]
        self.reports: dict[int, dict[str, tuple[float, int, float]]] = {}
        self._shares: dict[int, list[float]] = {}
        self._guarded: dict[int, list[str]] = {}  # what each batch's shares were drawn with

    def observe(self, batch: int, report: Report) -> None:
        """Record batch ``batch``'s per-domain (signal sum, completions). A report that
        arrives again for the same batch (a step replayed after a resume) must agree."""
        clean = {d: _entry(v) for d, v in report.items() if d in self.domains}
        old = self.reports.get(batch)
        if old is not None and old != clean:
            raise RuntimeError(
                f"adaptive mixture: batch {batch} reported twice with different signals "
                f"({old} then {clean}); its shares would depend on which arrived first"
            )
        self.reports[batch] = clean

    def shares(self, batch: int) -> list[float]:
        """Every domain's share of batch ``batch``, aligned with ``domains``."""
        if batch not in self._shares:
            self._shares[batch] = self._compute(batch)
        return self._shares[batch]

    def signal_means(self, batch: int) -> dict[str, float]:
        """Batch ``batch``'s mean signal per domain it held (for the per-step log)."""
        return {d: s / n for d, (s, n, _) in self.reports.get(batch, {}).items() if n > 0}

    def guarded(self, batch: int) -> list[str]:
        """The domains whose floor is their initial share for batch ``batch`` (the guard)."""
        if batch not in self._guarded:
            last = batch - self.settings.lag
            off = last < 0 or self.settings.guard_drop <= 0
            self._guarded[batch] = [] if off else [d for d in self.domains if self._fell(d, last)]
        return self._guarded[batch]

    def _fell(self, domain: str, last: int) -> bool:
        """Whether ``domain``'s mean reward over the window ending at ``last`` is more than
        ``guard_drop`` below its best window ending at or before it."""
        means = [m for end in range(last + 1) if (m := self._window_reward(domain, end)) is not None]
        return bool(means) and max(means) - means[-1] > self.settings.guard_drop

    def _window_reward(self, domain: str, end: int) -> float | None:
        reward, count = 0.0, 0
        for b in range(max(0, end - self.settings.window + 1), end + 1):
            _, n, r = self.reports.get(b, {}).get(domain, (0.0, 0, 0.0))
            reward, count = reward + r, count + n
        return reward / count if count else None

    def _compute(self, batch: int) -> list[float]:
        cfg = self.settings
        last = batch - cfg.lag
        if last < 0:
            return list(self.initial)
        window = range(max(0, last - cfg.window + 1), last + 1)
        if missing := [b for b in window if b not in self.reports]:
            raise RuntimeError(
                f"adaptive mixture: batch {batch} is drawn before the learning signal of "
                f"batch(es) {missing} arrived; the data loader runs more than "
                f"mixture.adaptive.lag={cfg.lag} batches ahead of training: raise the lag"
            )
        sums = dict.fromkeys(self.domains, 0.0)
        counts = dict.fromkeys(self.domains, 0)
        for b in window:
            for d, (s, n, _) in self.reports[b].items():
                sums[d] += s
                counts[d] += n
        total = sum(counts.values())
        bonus_log = 2.0 * math.log(max(total, 2))
        scores = [
            (sums[d] / counts[d] if counts[d] else 0.0) + cfg.exploration * math.sqrt(bonus_log / max(counts[d], 1))
            for d in self.domains
        ]
        top = max(scores)
        exps = [math.exp((s - top) / cfg.temperature) for s in scores]
        z = sum(exps)
        floors = self._floors(batch)
        spread = 1.0 - sum(floors)
        return [f + spread * e / z for f, e in zip(floors, exps, strict=True)]

    def _floors(self, batch: int) -> list[float]:
        """Every domain's least share: ``floor``, or for a guarded domain its initial share;
        scaled down together where guarded floors would leave no room."""
        guarded = set(self.guarded(batch))
        floors = [
            max(self.settings.floor, w) if d in guarded else self.settings.floor
            for d, w in zip(self.domains, self.initial, strict=True)
        ]
        total = sum(floors)
        return [f / total for f in floors] if total > 1.0 else floors

    def state_dict(self, before_batch: int | None = None) -> dict[str, Any]:
        """The reports (of batches before ``before_batch``): all a resume needs."""
        kept = {
            str(b): {d: list(v) for d, v in r.items()}
            for b, r in sorted(self.reports.items())
            if before_batch is None or b < before_batch
        }
        return {"settings": self.settings.describe(), "domains": self.domains, "reports": kept}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("settings") != self.settings.describe() or state.get("domains") != self.domains:
            raise ValueError(
                "adaptive mixture state was saved with other domains or mixture.adaptive "
                f"settings ({state.get('domains')}, {state.get('settings')}); resume with the "
                "settings that saved it"
            )
        self.reports = {int(b): {d: _entry(v) for d, v in r.items()} for b, r in state["reports"].items()}
        self._shares, self._guarded = {}, {}


def batch_report(
    domains: Sequence[str], advantages: Sequence[float], signal: str, rewards: Sequence[float] | None = None
) -> dict[str, tuple[float, int, float]]:
    """One batch's (signal sum, completions, reward sum) per domain from each completion's
    domain, advantage and reward (this process's share of the batch; sum the reports over
    processes). Without ``rewards`` the reward sums are 0 and the guard sees no fall."""
    out: dict[str, tuple[float, int, float]] = {}
    scores = rewards if rewards is not None else [0.0] * len(advantages)
    for domain, adv, reward in zip(domains, advantages, scores, strict=True):
        value = abs(adv) if signal == "abs_advantage" else float(abs(adv) > 1e-8)
        s, n, r = out.get(domain, (0.0, 0, 0.0))
        out[domain] = (s + value, n + 1, r + float(reward))
    return out


def _entry(value: Sequence[float]) -> tuple[float, int, float]:
    """A report entry as (signal sum, completions, reward sum); older two-value entries (saved
    before reports carried rewards) read as reward 0."""
    return (float(value[0]), int(value[1]), float(value[2]) if len(value) > 2 else 0.0)


STATE_FILE = "mixture_adaptive.json"  # in each checkpoint folder of an adaptive run


def save_mixture_state(sampler, folder: Path, global_step: int) -> None:
    """An adaptive sampler's reports of the batches trained so far into a checkpoint folder
    (other modes replay from the seed alone and write nothing)."""
    if sampler.adaptive is None:
        return
    trained = (global_step - 1) // sampler.steps_per_batch + 1 if global_step > 0 else 0
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"global_step": global_step, **sampler.adaptive.state_dict(trained)}
    tmp = folder / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(payload))
    tmp.replace(folder / STATE_FILE)


def load_mixture_state(sampler, folder: Path) -> None:
    """Restore an adaptive sampler's reports from a checkpoint before the trainer replays the
    stream to its step; a checkpoint of an adaptive run without them cannot resume exactly."""
    if sampler.adaptive is None:
        return
    path = folder / STATE_FILE
    if not path.is_file():
        raise ValueError(
            f"{folder} has no {STATE_FILE}: it was not saved by an adaptive-mixture run, so "
            "its batches' shares cannot be replayed; resume with the mixture that saved it"
        )
    sampler.adaptive.load_state_dict(json.loads(path.read_text()))
