#!/usr/bin/env bash
# Render the kustomization and validate it against the embedded local cluster with a
# server-side dry run: every object must be accepted by a real apiserver-shaped endpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
KUBECTL=${KUBECTL:-kubectl}
workdir=$(mktemp -d)
log="$workdir/local-cluster.log"
"$BIN/ascendjob-controller" local-cluster --port 0 --kubeconfig "$workdir/kubeconfig" --no-kubelet >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$workdir"' EXIT
for _ in $(seq 1 100); do
  grep -q '^ready ' "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
grep -q '^ready ' "$log" || { echo "local cluster did not become ready" >&2; cat "$log" >&2; exit 1; }
# A dry run creates nothing, so (as on a real cluster) the namespaced objects would find no
# namespace: create it for real on this throwaway cluster first.
"$KUBECTL" --kubeconfig "$workdir/kubeconfig" create namespace ascendjob-system >/dev/null
"$KUBECTL" --kubeconfig "$workdir/kubeconfig" apply --dry-run=server -k manifests/
# The CRDs must really exist for the sample jobs to be validated against their schema.
"$KUBECTL" --kubeconfig "$workdir/kubeconfig" apply -f manifests/crd/ >/dev/null
"$KUBECTL" --kubeconfig "$workdir/kubeconfig" apply --dry-run=server -f manifests/samples/
echo "manifests-check: manifests/ and manifests/samples/ accepted by the API server (dry run)"
