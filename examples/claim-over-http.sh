#!/usr/bin/env bash
# Claims a sandbox over warmpool's HTTP claim API, renews it, reads it back and
# releases it, as a program would (docs/claim-api.md). Needs bash, curl and
# kubectl (for the token); no jq.
#
#   CLAIMS_URL=http://warmpool-claims.warmpool-system:8081 examples/claim-over-http.sh
#
# Settings (environment):
#   CLAIMS_URL       the claim API's origin (required), e.g. the Service <fullname>-claims, port 8081
#                    (<fullname>: <release>-warmpool, or the release name when it contains warmpool)
#   NAMESPACE        where the pool is (default team-a)
#   POOL             the SandboxWarmPool (default python)
#   SERVICE_ACCOUNT  whose token to use (default claimer, see 20-claimer-rbac.yaml)
#   TOKEN            a token to use instead of `kubectl create token`
#   CLAIM_REF        the claim's idempotency key (default: a fresh one)
#   TTL_SECONDS      the lease (default 60)
set -euo pipefail

: "${CLAIMS_URL:?set CLAIMS_URL to the claim API origin, e.g. http://warmpool-claims.warmpool-system:8081}"
NAMESPACE=${NAMESPACE:-team-a}
POOL=${POOL:-python}
SERVICE_ACCOUNT=${SERVICE_ACCOUNT:-claimer}
TTL_SECONDS=${TTL_SECONDS:-60}
CLAIM_REF=${CLAIM_REF:-example-$(date +%s)-$$}
TOKEN=${TOKEN:-$(kubectl create token "$SERVICE_ACCOUNT" -n "$NAMESPACE" --duration 10m)}
CLAIMS="${CLAIMS_URL%/}/v1/namespaces/$NAMESPACE/claims"

body=$(mktemp)
trap 'rm -f "$body"' EXIT

# call METHOD URL [JSON]: prints the HTTP status ("000" when the connection
# failed); the answer's body is in $body.
call() {
  local data=()
  [[ $# -ge 3 ]] && data=(-H 'content-type: application/json' --data "$3")
  curl -sS --max-time 30 -o "$body" -w '%{http_code}' -X "$1" \
    -H "Authorization: Bearer $TOKEN" ${data[@]+"${data[@]}"} "$2" 2>/dev/null || true
}

# field NAME: a string field of the JSON answer (the API answers flat JSON).
field() {
  sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' "$body"
}

fail() {
  echo "$1: HTTP $2 $(cat "$body")" >&2
  exit 1
}

# 1. Claim. The claimRef makes the claim idempotent: on a connection error,
#    a timeout or a 5xx, send the same request again and get the same sandbox,
#    never a second one.
request="{\"warmPool\":\"$POOL\",\"ttlSeconds\":$TTL_SECONDS,\"claimRef\":\"$CLAIM_REF\"}"
for attempt in 1 2 3 4 5; do
  status=$(call POST "$CLAIMS" "$request")
  case $status in
    200) break ;;
    000 | 5??) echo "claim attempt $attempt: HTTP $status, retrying with the same claimRef" >&2; sleep 1 ;;
    *) fail "claim refused" "$status" ;;
  esac
done
[[ $status == 200 ]] || fail "claim failed" "$status"
id=$(field id)
echo "claimed $id (claimRef $CLAIM_REF) on node $(field node), reached at $(field ownerAddr) with its token, until $(field deadline)"

# 2. Renew: a new lease of TTL_SECONDS from now.
status=$(call POST "$CLAIMS/$id/renew" "{\"ttlSeconds\":$TTL_SECONDS}")
[[ $status == 200 ]] || fail "renew failed" "$status"
echo "renewed until $(field deadline)"

# 3. Read it back (by claimRef or id; the answer carries no token).
status=$(call GET "$CLAIMS/$CLAIM_REF")
[[ $status == 200 ]] || fail "get failed" "$status"
echo "read back $(field id), tier $(field tier)"

# 4. Release: the node destroys the sandbox.
status=$(call DELETE "$CLAIMS/$id")
[[ $status == 204 ]] || fail "release failed" "$status"
echo "released $id"
