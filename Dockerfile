# respread operator image: `docker build -t ghcr.io/respread/respread:0.1.0 .`
#
# Two stages: the builder installs the package and its dependencies into a virtualenv (without
# pip in it); the runtime copies only that virtualenv onto the same slim Python base and runs as
# a numeric non-root user, so Kubernetes can verify runAsNonRoot without a passwd lookup.
# The entrypoint is exec form: nothing at run time needs a shell.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv --without-pip /opt/venv
WORKDIR /src
# Only what the package build needs (pyproject.toml names README.md as the long description).
COPY pyproject.toml README.md ./
COPY operator/ operator/
# A regular (not editable) install; pip compiles the .pyc files here, since the runtime's root
# filesystem is read-only.
RUN pip --python /opt/venv/bin/python install . \
 && /opt/venv/bin/respread --help > /dev/null

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="respread" \
      org.opencontainers.image.description="Rebalances pods violating Pod Topology Spread Constraints" \
      org.opencontainers.image.source="https://github.com/respread/respread" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# The virtualenv's interpreter is a symlink to the base image's /usr/local/bin/python3.11, the
# same path in both stages.
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
# 8080: liveness (--liveness http://0.0.0.0:8080/healthz); 9090: Prometheus metrics.
EXPOSE 8080 9090
ENTRYPOINT ["respread"]
CMD ["run"]
