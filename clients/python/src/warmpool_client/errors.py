"""What a call can fail with.

A ClaimApiError is the server's answer (its status and machine-readable
reason); a TransportError is no answer at all (the connection failed or the
call timed out), after which a claim's outcome is unknown: retry it with the
same claimRef.
"""

from __future__ import annotations

from typing import Optional


class WarmpoolError(Exception):
    """Every error of this package."""


class ClaimApiError(WarmpoolError):
    """The claim API answered with an error body: branch on ``reason``, not on the message."""

    def __init__(self, status: int, reason: str, message: str, retry_after_seconds: Optional[float]) -> None:
        super().__init__(message)
        self.status = status
        #: The API's reason (``NoCapacity``, ``ClaimRefInUse``, ...); ``Unknown`` when the body was not the API's.
        self.reason = reason
        self.retry_after_seconds = retry_after_seconds


class TransportError(WarmpoolError):
    """No answer: ``kind`` is ``connection`` or ``timeout``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ConfigurationError(WarmpoolError):
    """The client could not be set up (no token, a kubeconfig it cannot use, a bad URL)."""
