"""``python -m warmpool_client`` (or ``warmpool-py``): the claim API from a shell.

Answers are JSON on stdout; a failure is JSON on stderr (``{"error", "reason",
"status"}``) and an exit code that says what failed (the same as the
TypeScript CLI's, see the README).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from .client import ClaimClient
from .errors import ClaimApiError, ConfigurationError, TransportError
from .retry import RetryPolicy
from .token import default_token_source, token_from_file, token_from_kubeconfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DENIED, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_NO_CAPACITY, EXIT_UNAVAILABLE = range(8)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 itself; report it as JSON like every failure
        raise ConfigurationError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="warmpool-py", description="warmpool's claim API")
    parser.add_argument("--url", default=os.environ.get("WARMPOOL_CLAIMS_URL"))
    parser.add_argument("-n", "--namespace", default=os.environ.get("WARMPOOL_NAMESPACE", "default"))
    parser.add_argument("--token-file")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--context")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--attempts", type=int, default=5)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    claim = commands.add_parser("claim")
    target = claim.add_mutually_exclusive_group(required=True)
    target.add_argument("--pool")
    target.add_argument("--env")
    claim.add_argument("--scaling-group")
    claim.add_argument("--ttl", type=int)
    claim.add_argument("--claim-ref")
    for name in ("get", "release"):
        commands.add_parser(name).add_argument("id")
    renew = commands.add_parser("renew")
    renew.add_argument("id")
    renew.add_argument("--ttl", type=int)
    return parser


def _client(args: argparse.Namespace) -> ClaimClient:
    if not args.url:
        raise ConfigurationError("give the claim API with --url or WARMPOOL_CLAIMS_URL")
    if args.token_file:
        token = token_from_file(args.token_file)
    elif args.kubeconfig or args.context:
        token = token_from_kubeconfig(args.kubeconfig, args.context)
    else:
        token = default_token_source()

    def on_retry(attempt: int, error: BaseException, delay: float) -> None:
        print(json.dumps({"retry": attempt, "after": round(delay * 1000), "error": str(error)}), file=sys.stderr)

    return ClaimClient(
        args.url,
        namespace=args.namespace,
        token=token,
        timeout=args.timeout,
        retry=RetryPolicy(attempts=args.attempts),
        on_retry=on_retry,
    )


def _run(argv: List[str]) -> Dict[str, Any]:
    args = _parser().parse_args(argv)
    client = _client(args)
    if args.command == "claim":
        claim = client.claim(
            args.pool,
            env=args.env,
            scaling_group=args.scaling_group,
            ttl_seconds=args.ttl,
            claim_ref=args.claim_ref,
        )
        return dataclasses.asdict(claim)
    if args.command == "get":
        return dataclasses.asdict(client.get(args.id))
    if args.command == "renew":
        return dataclasses.asdict(client.renew(args.id, args.ttl))
    client.release(args.id)
    return {"released": args.id}


def failure(error: BaseException) -> Tuple[int, Dict[str, Any]]:
    """The exit code and the stderr JSON for a failure."""
    if isinstance(error, ConfigurationError):
        return EXIT_USAGE, {"error": str(error), "reason": "Usage"}
    if isinstance(error, TransportError):
        return EXIT_UNAVAILABLE, {"error": str(error), "reason": "Timeout" if error.kind == "timeout" else "Unreachable"}
    if isinstance(error, ClaimApiError):
        report: Dict[str, Any] = {"error": str(error), "reason": error.reason, "status": error.status}
        by_status = {400: EXIT_USAGE, 401: EXIT_DENIED, 403: EXIT_DENIED, 404: EXIT_NOT_FOUND, 409: EXIT_CONFLICT, 429: EXIT_NO_CAPACITY}
        code: Optional[int] = by_status.get(error.status)
        if code is None:
            code = EXIT_UNAVAILABLE if error.status >= 500 else EXIT_FAILED
        return code, report
    return EXIT_FAILED, {"error": str(error), "reason": "Internal"}


def main(argv: Optional[List[str]] = None) -> int:
    try:
        answer = _run(sys.argv[1:] if argv is None else argv)
    except Exception as error:  # noqa: BLE001 - every failure is reported the same way
        code, report = failure(error)
        print(json.dumps(report), file=sys.stderr)
        return code
    print(json.dumps(answer, indent=2))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
