"""Where the bearer token comes from.

The claim API accepts any token the cluster's TokenReview accepts: in a pod,
the projected ServiceAccount token (re-read on every call, since kubelet
rotates it); outside, a token file (``kubectl create token <sa> > token``) or
the kubeconfig's token.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Callable, Optional

from .errors import ConfigurationError

#: Returns the token to present now.
TokenSource = Callable[[], str]

IN_CLUSTER_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def token_from_file(path: str) -> TokenSource:
    """A token file, read on every call (a projected token is rotated in place)."""

    def read() -> str:
        try:
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as error:
            raise ConfigurationError(f"cannot read the token file {path}: {error}") from error
        if not token:
            raise ConfigurationError(f"the token file {path} is empty")
        return token

    return read


def token_from_kubeconfig(path: Optional[str] = None, context: Optional[str] = None) -> TokenSource:
    """The bearer token (``token`` or ``tokenFile``) of a kubeconfig context.

    The standard library reads no YAML, so the kubeconfig is read through
    ``kubectl config view --minify --raw -o json``: kubectl must be on PATH.
    """
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise ConfigurationError("reading a kubeconfig needs kubectl on PATH; give a token file instead")
    args = [kubectl, "config", "view", "--minify", "--raw", "-o", "json"]
    if path is not None:
        args.append(f"--kubeconfig={path}")
    if context is not None:
        args.append(f"--context={context}")
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ConfigurationError(f"kubectl config view: {done.stderr.strip()}")
    users = json.loads(done.stdout).get("users") or []
    user = users[0].get("user", {}) if users else {}
    if user.get("token"):
        token = str(user["token"])
        return lambda: token
    if user.get("tokenFile"):
        return token_from_file(str(user["tokenFile"]))
    raise ConfigurationError(
        "the kubeconfig user has no token or tokenFile (a client certificate or exec plugin cannot call the "
        "claim API); use a token file, e.g. kubectl create token <serviceaccount> > token"
    )


def default_token_source() -> TokenSource:
    """The first that is there: WARMPOOL_TOKEN, the file WARMPOOL_TOKEN_FILE, the pod's token, the kubeconfig's."""
    token = os.environ.get("WARMPOOL_TOKEN")
    if token:
        return lambda: token
    path = os.environ.get("WARMPOOL_TOKEN_FILE")
    if path:
        return token_from_file(path)
    if os.path.exists(IN_CLUSTER_TOKEN_FILE):
        return token_from_file(IN_CLUSTER_TOKEN_FILE)
    return token_from_kubeconfig()
