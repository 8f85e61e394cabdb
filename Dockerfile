# syntax=docker/dockerfile:1
# topospread: the admission webhook image.
#   docker build -t topospread:0.1.0 .
# Two stages: the first installs the project into a virtualenv, the second copies only
# that virtualenv onto a clean slim Python (no compiler, no pip cache, no sources).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/topospread
COPY requirements.lock pyproject.toml README.md ./
COPY webhook ./webhook
# Runtime dependencies exactly as pinned, each checked against its hash
# (requirements.lock, `make lock`), then the project itself without resolving again.
# Wheels only: the slim base has no compiler, and the final image must not need one.
RUN /opt/topospread/bin/pip install --only-binary=:all: --require-hashes --no-deps \
        -r requirements.lock \
    && /opt/topospread/bin/pip install --no-deps . \
    && /opt/topospread/bin/python -m compileall -q /opt/topospread/lib \
    && /opt/topospread/bin/pip uninstall -y pip setuptools wheel

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="topospread" \
      org.opencontainers.image.description="Admission webhook for Pod topology spread constraints" \
      org.opencontainers.image.licenses="Apache-2.0"
# The root filesystem is read-only in the cluster: gunicorn's control socket and
# worker files go to /tmp (an emptyDir there).
ENV PATH=/opt/topospread/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    XDG_RUNTIME_DIR=/tmp
COPY --from=build /opt/topospread /opt/topospread
# Numeric, so that runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["topospread"]
CMD ["serve", "--in-cluster", "--config", "/etc/topospread/config.yaml", \
     "--cert-dir", "/etc/topospread/certs", "--bind", "0.0.0.0:8443"]
