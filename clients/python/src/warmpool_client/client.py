"""A client of warmpool's HTTP claim API (docs/claim-api.md in the repository).

claim, get, renew, release, with the retry rule of ``retry.py``. A claim
without a claimRef gets one here, before the first attempt, so every retry
names the same claim and can only ever answer the same sandbox.
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from .errors import ClaimApiError, ConfigurationError, TransportError
from .retry import RetryPolicy, with_retries
from .token import TokenSource, default_token_source

#: The reasons the API answers (libs/api CLAIM_FAILURE_REASONS in the repository).
CLAIM_FAILURE_REASONS = frozenset(
    {
        "BadRequest",
        "Unauthenticated",
        "Forbidden",
        "PoolNotFound",
        "EnvNotFound",
        "NotDriven",
        "ClaimNotFound",
        "ClaimRefInUse",
        "NoCapacity",
        "NodeRefused",
        "Expired",
        "Unavailable",
        "Timeout",
        "MethodNotAllowed",
        "NotFound",
    }
)

_CLAIM_REF = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Claim:
    """A claimed sandbox. ``token`` is only in the answer to ``claim``."""

    id: str
    deadline: str
    owner_addr: str
    node: str
    namespace: str
    warm_pool: str
    claim_ref: str
    tier: str
    token: Optional[str] = None
    #: Env claims: the cluster that serves it, and the member pool.
    cluster: Optional[str] = None
    member_pool: Optional[str] = None

    @classmethod
    def from_json(cls, body: Dict[str, Any]) -> "Claim":
        try:
            return cls(
                id=str(body["id"]),
                deadline=str(body["deadline"]),
                owner_addr=str(body["ownerAddr"]),
                node=str(body["node"]),
                namespace=str(body["namespace"]),
                warm_pool=str(body["warmPool"]),
                claim_ref=str(body["claimRef"]),
                tier=str(body["tier"]),
                token=body.get("token"),
                cluster=body.get("cluster"),
                member_pool=body.get("memberPool"),
            )
        except (KeyError, TypeError) as error:
            raise ClaimApiError(200, "Unknown", f"the answer is not a claim: {body!r}", None) from error


@dataclass(frozen=True)
class Renewed:
    deadline: str


def new_claim_ref() -> str:
    """A fresh claimRef: a DNS label that no other claim will pick."""
    return "c-" + secrets.token_hex(12)


class ClaimClient:
    """claim / get / renew / release against one namespace of a claim API."""

    def __init__(
        self,
        url: str,
        namespace: str = "default",
        token: Optional[TokenSource] = None,
        timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigurationError(f"the claim API URL must be http(s)://host[:port], not {url!r}")
        self._origin = f"{parsed.scheme}://{parsed.netloc}"
        self.namespace = namespace
        self._token = token if token is not None else default_token_source()
        self._timeout = timeout
        self._retry = retry
        self._on_retry = on_retry

    def claim(
        self,
        warm_pool: Optional[str] = None,
        *,
        env: Optional[str] = None,
        scaling_group: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        claim_ref: Optional[str] = None,
    ) -> Claim:
        """Claims a sandbox from a pool (or a SandboxEnv); retried with the same claimRef."""
        if (warm_pool is None) == (env is None):
            raise ConfigurationError("give exactly one of warm_pool and env")
        ref = claim_ref if claim_ref is not None else new_claim_ref()
        if len(ref) > 63 or not _CLAIM_REF.match(ref):
            raise ConfigurationError(f"claimRef {ref!r} must be a DNS label (at most 63 of [a-z0-9-])")
        body: Dict[str, Any] = {"claimRef": ref}
        if warm_pool is not None:
            body["warmPool"] = warm_pool
        if env is not None:
            body["env"] = env
        if scaling_group is not None:
            body["scalingGroup"] = scaling_group
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        return Claim.from_json(self._call("POST", self._claims(), body))

    def get(self, claim_id: str) -> Claim:
        """The claim (without its token) by sandbox id or claimRef."""
        return Claim.from_json(self._call("GET", self._claims(claim_id)))

    def renew(self, claim_id: str, ttl_seconds: Optional[int] = None) -> Renewed:
        """A new lease of ``ttl_seconds`` (the server's default, 300, when None) from now."""
        body = {} if ttl_seconds is None else {"ttlSeconds": ttl_seconds}
        answer = self._call("POST", self._claims(claim_id) + "/renew", body)
        return Renewed(deadline=str(answer["deadline"]))

    def release(self, claim_id: str, *, ignore_not_found: bool = False) -> None:
        """Releases the sandbox; a retried release that already went through answers ClaimNotFound."""
        try:
            self._call("DELETE", self._claims(claim_id))
        except ClaimApiError as error:
            if not (ignore_not_found and error.reason == "ClaimNotFound"):
                raise

    def _claims(self, claim_id: Optional[str] = None) -> str:
        path = f"/v1/namespaces/{urllib.parse.quote(self.namespace, safe='')}/claims"
        return path if claim_id is None else f"{path}/{urllib.parse.quote(claim_id, safe='')}"

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return with_retries(lambda: self._once(method, path, body), self._retry, self._on_retry)

    def _once(self, method: str, path: str, body: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._token()}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(self._origin + path, data=data, headers=headers, method=method)
        try:
            with _OPENER.open(request, timeout=self._timeout) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise _api_error(error.code, error.headers.get("Retry-After"), error.read().decode(errors="replace"))
        except (socket.timeout, TimeoutError) as error:
            raise TransportError("timeout", f"{method} {path}: no answer within {self._timeout} s") from error
        except urllib.error.URLError as error:
            kind = "timeout" if isinstance(error.reason, (socket.timeout, TimeoutError)) else "connection"
            raise TransportError(kind, f"{method} {path}: {error.reason}") from error
        except (http.client.HTTPException, ConnectionError) as error:
            raise TransportError("connection", f"{method} {path}: {error!r}") from error
        return json.loads(text) if text else {}


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """The API never redirects: a redirect would carry the token elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _api_error(status: int, retry_after: Optional[str], text: str) -> ClaimApiError:
    try:
        seconds: Optional[float] = float(retry_after) if retry_after else None
    except ValueError:
        seconds = None
    try:
        body = json.loads(text)
        message, reason = str(body["error"]), str(body["reason"])
    except (ValueError, KeyError, TypeError):
        return ClaimApiError(status, "Unknown", f"HTTP {status}: {text[:200]}", seconds)
    return ClaimApiError(status, reason if reason in CLAIM_FAILURE_REASONS else "Unknown", message, seconds)
