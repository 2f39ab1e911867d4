# syntax=docker/dockerfile:1
# ascendjob-controller image: `make docker-build` (docker build -t ascendjob-controller:0.1.0 .)
#
# Stage 1 builds wheels (ours and every dependency); stage 2 installs only those wheels, with
# no compiler, no source tree and no pip left behind, and runs as a numeric non-root user so
# `runAsNonRoot` can be verified by the kubelet.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml setup.cfg README.md ./
COPY ascendjob_controller ./ascendjob_controller
RUN python -m pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="ascendjob-controller" \
      org.opencontainers.image.description="Kubernetes controller for AscendJob (mindxdl.gitee.com/v1) training jobs on Ascend NPUs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
# Unbuffered so log lines reach `kubectl logs` at once; no bytecode writes on a read-only root
# (pip compiles it at install time instead).
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels ascendjob-controller \
    && python -m pip uninstall --yes pip setuptools wheel
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 8081
ENTRYPOINT ["ascendjob-controller", "run"]
