#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager and etcd from Go modules into
# $ASCENDJOB_REALCLUSTER_BIN (default ~/.cache/ascendjob-controller/realcluster/bin, outside
# the repository, so every clone on the machine, CI's included, reuses one build). The binaries are a test dependency of
# the real-cluster lane only; the controller itself is Python.
#
# A build is reused while the go.mod/go.sum files it was made from are
# unchanged: their hash is kept in $OUT/.stamp. GOCACHE and GOMODCACHE stay
# wherever the Go toolchain keeps them (outside the repository), so a rebuild
# after a bump only recompiles what changed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${ASCENDJOB_REALCLUSTER_BIN:-$HOME/.cache/ascendjob-controller/realcluster/bin}"
K8S_VERSION="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$HERE/go.mod")"
[[ -n "$K8S_VERSION" ]] || { echo "no k8s.io/kubernetes requirement in $HERE/go.mod" >&2; exit 1; }

stamp() {
  cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/etcd/go.mod" "$HERE/etcd/go.sum" "$HERE/build.sh" | sha256sum | cut -d' ' -f1
}

want="$(stamp)"
# One build at a time per output directory: a second `make` (another test run, a helper)
# waits for the first and then finds the binaries up to date.
mkdir -p "$OUT"
exec 9>"$OUT/.build.lock"
flock 9
if [[ -f "$OUT/.stamp" && "$(cat "$OUT/.stamp")" == "$want" \
      && -x "$OUT/kube-apiserver" && -x "$OUT/kube-controller-manager" && -x "$OUT/etcd" ]]; then
  echo "real-cluster binaries are up to date in $OUT"
  exit 0
fi

command -v go >/dev/null || { echo "go is not on PATH: the real-cluster lane needs Go 1.26" >&2; exit 1; }
rm -f "$OUT/.stamp"

# Stamp the version as Kubernetes' own hack/lib/version.sh does, so /version
# reports the real release and kubectl sees a matching server.
major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
pkg=k8s.io/component-base/version
ldflags="-s -w \
  -X $pkg.gitVersion=$K8S_VERSION \
  -X $pkg.gitMajor=$major \
  -X $pkg.gitMinor=$minor \
  -X $pkg.gitCommit=0000000000000000000000000000000000000000 \
  -X $pkg.gitTreeState=clean \
  -X $pkg.buildDate=1970-01-01T00:00:00Z \
  -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION \
  -X k8s.io/client-go/pkg/version.gitMajor=$major \
  -X k8s.io/client-go/pkg/version.gitMinor=$minor"

start=$SECONDS
echo "building kube-apiserver and kube-controller-manager $K8S_VERSION into $OUT"
(cd "$HERE" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$OUT/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
echo "building etcd into $OUT"
(cd "$HERE/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3)
echo "$want" > "$OUT/.stamp"
echo "built in $((SECONDS - start)) s"
