#!/usr/bin/env bash
# Build the helm CLI from its Go module (helm.sh/helm/v3, the release pinned below) into
# $ASCENDJOB_HELM_BIN (default ~/.cache/ascendjob-controller/helm/bin, beside the real-cluster
# binaries and outside the repository, so every clone on the machine, CI's included, reuses one
# build). helm is a test and packaging tool only: `make helm-bin`, then the chart tests run.
#
# The build is reused while the pinned version and this script are unchanged (their hash is
# kept in $OUT/.stamp). GOCACHE and GOMODCACHE stay wherever the Go toolchain keeps them.
set -euo pipefail
HELM_VERSION="v3.21.4"
OUT="${ASCENDJOB_HELM_BIN:-$HOME/.cache/ascendjob-controller/helm/bin}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

want="$(cat "$HERE/build.sh" | sha256sum | cut -d' ' -f1)"
mkdir -p "$OUT"
# One build at a time per output directory; a second caller waits, then finds it up to date.
exec 9>"$OUT/.build.lock"
flock 9
if [[ -f "$OUT/.stamp" && "$(cat "$OUT/.stamp")" == "$want" && -x "$OUT/helm" ]]; then
  echo "helm $HELM_VERSION is up to date in $OUT"
  exit 0
fi
command -v go >/dev/null || { echo "go is not on PATH: building helm needs Go 1.26" >&2; exit 1; }
rm -f "$OUT/.stamp"

start=$SECONDS
echo "building helm $HELM_VERSION into $OUT"
# The release's own module (go.mod and go.sum as tagged), from the Go module proxy.
src="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "$src" ]] || { echo "go mod download helm.sh/helm/v3@$HELM_VERSION gave no directory" >&2; exit 1; }
# Stamp what helm's Makefile stamps: the version (else `helm version` shows the source tree's
# default), and the Kubernetes version `helm template`/`lint` assume without a cluster, from the
# client-go it is built with (v0.X.Y is Kubernetes 1.X; unstamped it would be 1.20).
client_go="$(cd "$src" && go list -m -f '{{.Version}}' k8s.io/client-go)"
k8s_minor="$(echo "$client_go" | cut -d. -f2)"
[[ "$k8s_minor" =~ ^[0-9]+$ ]] || { echo "cannot read k8s.io/client-go's version ($client_go)" >&2; exit 1; }
ver=helm.sh/helm/v3/internal/version
ldflags="-s -w -X $ver.version=$HELM_VERSION -X $ver.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
# `go install module@version` builds the module as released, ignoring any go.mod around it.
GOBIN="$OUT" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$OUT/helm" version --short
echo "$want" > "$OUT/.stamp"
echo "built in $((SECONDS - start)) s"
