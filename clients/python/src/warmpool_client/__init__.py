"""Client for warmpool's HTTP claim API.

>>> from warmpool_client import ClaimClient
>>> sandbox = ClaimClient("http://warmpool-claims.warmpool-system:8081", namespace="team-a").claim("python", ttl_seconds=60)
"""

from .client import CLAIM_FAILURE_REASONS, Claim, ClaimClient, Renewed, new_claim_ref
from .errors import ClaimApiError, ConfigurationError, TransportError, WarmpoolError
from .retry import RetryPolicy, is_retryable
from .token import IN_CLUSTER_TOKEN_FILE, TokenSource, default_token_source, token_from_file, token_from_kubeconfig

__all__ = [
    "CLAIM_FAILURE_REASONS",
    "Claim",
    "ClaimApiError",
    "ClaimClient",
    "ConfigurationError",
    "IN_CLUSTER_TOKEN_FILE",
    "Renewed",
    "RetryPolicy",
    "TokenSource",
    "TransportError",
    "WarmpoolError",
    "default_token_source",
    "is_retryable",
    "new_claim_ref",
    "token_from_file",
    "token_from_kubeconfig",
]
