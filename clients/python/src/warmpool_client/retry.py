"""The retry rule of a claim API client.

The API is idempotent by claimRef, so a call whose outcome is unknown, or that
the server could not serve for now, is sent again unchanged (the same
claimRef) and never answers with a second sandbox. A 4xx is the caller's to fix
and is not retried.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

from .errors import ClaimApiError, TransportError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    #: Attempts in all, the first included.
    attempts: int = 5
    #: First pause, doubled each time up to ``max_delay``, with jitter (seconds).
    base_delay: float = 0.2
    max_delay: float = 5.0
    #: Also retry 429 NoCapacity (after its Retry-After).
    retry_no_capacity: bool = False


def is_retryable(error: BaseException, policy: RetryPolicy) -> bool:
    if isinstance(error, TransportError):
        return True
    if isinstance(error, ClaimApiError):
        return error.status >= 500 or (error.status == 429 and policy.retry_no_capacity)
    return False


def delay_before(attempt: int, error: BaseException, policy: RetryPolicy) -> float:
    backoff = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
    jittered = backoff / 2 + random.random() * backoff / 2
    asked = (error.retry_after_seconds or 0.0) if isinstance(error, ClaimApiError) else 0.0
    return max(jittered, min(asked, policy.max_delay))


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
) -> T:
    attempt = 1
    while True:
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - classified just below
            if attempt >= policy.attempts or not is_retryable(error, policy):
                raise
            delay = delay_before(attempt, error, policy)
            if on_retry is not None:
                on_retry(attempt, error, delay)
            time.sleep(delay)
            attempt += 1
