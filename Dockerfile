# respread operator image. Build it with `hack/image` (no registry or Docker daemon needed), or
# `docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .`
#
# Two stages: the builder installs the locked dependencies (requirements/image.txt, every file
# checked against its hash) and respread's wheel into a virtualenv without pip, and compiles it to
# hash-based .pyc files; the runtime copies only that virtualenv onto the same Python base and
# runs as a numeric non-root user, so Kubernetes can verify runAsNonRoot without a passwd lookup.
# The entrypoint is exec form: nothing at run time needs a shell.
#
# The base: any Debian-like image with Python 3.11 (`python` on PATH, the venv module). hack/image
# passes a Debian bookworm root filesystem it makes with mmdebstrap; with a registry at hand the
# official image below does as well. A tag moves; to pin the exact base, use its digest, e.g.
#   --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>
# where `skopeo inspect --format '{{.Digest}}' docker://python:3.11-slim` (or `crane digest`,
# `docker buildx imagetools inspect`) prints the digest; let Renovate or Dependabot move it.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Dependencies first (their layer is reused while only respread's code changes). The build venv
# holds pip and setuptools (requirements/build.txt) and is left behind in this stage; its pip
# installs into /opt/venv, which gets no pip of its own. Binary wheels only: no compiler needed.
COPY requirements/ requirements/
RUN python -m venv /opt/build \
 && /opt/build/bin/pip install --require-hashes --no-deps --only-binary :all: -r requirements/build.txt \
 && python -m venv --without-pip /opt/venv \
 && /opt/build/bin/pip --python /opt/venv/bin/python install --require-hashes --no-deps \
      --only-binary :all: --no-compile -r requirements/image.txt \
 && python -m compileall -q -j 0 --invalidation-mode checked-hash /opt/venv/lib
# Only what the package build needs (pyproject.toml names README.md as the long description).
COPY pyproject.toml README.md ./
COPY operator/ operator/
# respread's wheel, built with the locked setuptools (no build isolation, so nothing unpinned is
# fetched), installed without dependencies (all are in the lock; `pip check` proves none is
# missing). The root filesystem is read-only at run time, so every .pyc is written here (the
# dependencies' in the layer above): hash-based (checked against the source's hash, not its
# mtime), so they stay valid whatever the layers do to timestamps.
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /tmp/dist . \
 && /opt/build/bin/pip --python /opt/venv/bin/python install --no-deps --no-compile /tmp/dist/*.whl \
 && /opt/build/bin/pip --python /opt/venv/bin/python check \
 && python -m compileall -q --invalidation-mode checked-hash /opt/venv/lib/python3*/site-packages/respread \
 && /opt/venv/bin/respread --help > /dev/null

FROM ${PYTHON_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="respread" \
      org.opencontainers.image.description="Rebalances pods violating Pod Topology Spread Constraints" \
      org.opencontainers.image.source="https://github.com/respread/respread" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# The image's environment; deploy/deployment.yaml does not repeat it.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# The virtualenv's interpreter is a symlink to the base image's python3.11, the same path in both
# stages.
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
# 8080: liveness (--liveness http://0.0.0.0:8080/healthz); 9090: Prometheus metrics.
EXPOSE 8080 9090
ENTRYPOINT ["respread"]
CMD ["run"]
