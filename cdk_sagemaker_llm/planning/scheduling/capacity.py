"""Capacity over the simulation: the most closed-loop clients per copy whose simulated ms/token
(and TTFT) meet the limits, found by bisecting the load (as Vidur searches configurations,
Agrawal et al., MLSys 2024), and the knee by the library's doubling rule
(``performance.KNEE_MIN_GAIN_PER_DOUBLING``) over simulated levels."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engine_profiles import EngineProfile
from ..performance import KNEE_MIN_GAIN_PER_DOUBLING, CopyModel
from .copy import simulate_copy
from .limits import BatchSettings
from .load import ClosedLoop
from .loop import SimulationResult


@dataclass(frozen=True)
class SimulatedLevel:
    """One simulated closed-loop level of one copy."""

    clients: int
    result: SimulationResult

    @property
    def ms_per_token(self) -> float:
        """Mean end-to-end latency / output tokens, ms."""
        return self.result.mean("ms_per_token")

    @property
    def ttft_ms(self) -> float:
        """Mean time to first token, ms."""
        return self.result.mean("ttft_s") * 1000

    @property
    def tokens_per_s(self) -> float:
        """Output tokens/s of the copy."""
        return self.result.tokens_per_s


class CopySimulation:
    """Simulated closed-loop levels of one copy, each run once and remembered."""

    def __init__(
        self,
        model: CopyModel,
        profile: EngineProfile,
        max_batch_size: int | None = None,
        steady_error: float | None = None,
        *,
        batch: BatchSettings | None = None,
    ) -> None:
        self.model = model
        self.profile = profile
        self.max_batch_size = max_batch_size
        self.batch = batch
        """The deployment's batch settings (None: the profile's, ``max_batch_size`` capping)."""
        self.steady_error = steady_error
        """Each level's ``ClosedLoop.steady_error`` (None: every round runs)."""
        self._levels: dict[int, SimulatedLevel] = {}

    def level(self, clients: int) -> SimulatedLevel:
        """The copy under ``clients`` closed-loop clients."""
        known = self._levels.get(clients)
        if known is None:
            result = simulate_copy(
                self.model,
                self.profile,
                ClosedLoop(clients, steady_error=self.steady_error),
                batch=self.batch,
                max_batch_size=self.max_batch_size,
            )
            known = self._levels[clients] = SimulatedLevel(clients, result)
        return known

    def simulated_clients(self) -> tuple[int, ...]:
        """The client counts simulated so far, ascending."""
        return tuple(sorted(self._levels))

    def meets(self, clients: int, max_ms_per_token: float, max_ttft_ms: float | None) -> bool:
        """Whether every client is served (no 429) within the limits at ``clients``."""
        level = self.level(clients)
        if level.result.rejected or not level.result.outcomes:
            return False
        if level.ms_per_token > max_ms_per_token:
            return False
        return max_ttft_ms is None or level.ttft_ms <= max_ttft_ms

    def capacity_within(
        self, max_ms_per_token: float, max_clients: int, max_ttft_ms: float | None = None
    ) -> SimulatedLevel | None:
        """The most clients (up to ``max_clients``) that meet the limits, by doubling then
        narrowing the bracket (ms/token grows with the load); None when one client alone misses
        them. Each round probes where ms/token crosses the limit on the line between the
        bracket's ends, then that probe's neighbour across the limit, then bisects what is left:
        the answer bisection finds, in fewer simulated levels when ms/token is near linear."""
        if not self.meets(1, max_ms_per_token, max_ttft_ms):
            return None
        low, high = 1, 2
        while high <= max_clients and self.meets(high, max_ms_per_token, max_ttft_ms):
            low, high = high, high * 2
        high = min(high, max_clients + 1)
        while high - low > 1:
            guess = self._crossing(low, high, max_ms_per_token)
            if guess is not None:
                low, high = self._narrowed(low, high, guess, max_ms_per_token, max_ttft_ms)
                neighbour = guess + 1 if low == guess else guess - 1
                if low < neighbour < high:
                    low, high = self._narrowed(low, high, neighbour, max_ms_per_token, max_ttft_ms)
            if high - low > 1:
                middle = (low + high) // 2
                low, high = self._narrowed(low, high, middle, max_ms_per_token, max_ttft_ms)
        return self.level(low)

    def _crossing(self, low: int, high: int, max_ms_per_token: float) -> int | None:
        """The clients in (low, high) where ms/token, linear between the bracket's simulated
        ends, reaches the limit; None when ms/token does not bracket it (``high`` never
        simulated, or refused for another reason: 429s, TTFT)."""
        if high not in self._levels:
            return None
        below, above = self._levels[low].ms_per_token, self._levels[high].ms_per_token
        if not below < max_ms_per_token < above:
            return None
        share = (max_ms_per_token - below) / (above - below)
        return min(high - 1, max(low + 1, low + int(share * (high - low))))

    def _narrowed(
        self, low: int, high: int, probe: int, max_ms_per_token: float, max_ttft_ms: float | None
    ) -> tuple[int, int]:
        """The bracket once ``probe`` is simulated."""
        if self.meets(probe, max_ms_per_token, max_ttft_ms):
            return probe, high
        return low, probe

    def knee(self, max_clients: int) -> SimulatedLevel:
        """The last level before doubling the clients buys less than
        ``KNEE_MIN_GAIN_PER_DOUBLING`` more throughput (or ``max_clients``)."""
        previous = self.level(1)
        clients = 2
        while clients <= max_clients:
            current = self.level(clients)
            doublings = math.log2(clients / previous.clients)
            ratio = current.tokens_per_s / previous.tokens_per_s if previous.tokens_per_s else 0
            gain = ratio ** (1 / doublings) - 1  # per doubling, as copy_knee
            if gain < KNEE_MIN_GAIN_PER_DOUBLING or current.result.rejected:
                return previous
            previous = current
            clients = min(clients * 2, max_clients) if clients < max_clients else max_clients + 1
        return previous
