# syntax=docker/dockerfile:1
# topospread: the admission webhook image.
#   make image                       (podman or buildah, the base from Debian's archive)
#   docker build --build-arg VERSION=0.1.0 -t REGISTRY/topospread:0.1.0 .
# Two stages: the first installs the project into a virtualenv, the second copies only
# that virtualenv onto a clean Python base (no compiler, no pip, no sources).
#
# PYTHON_IMAGE: any Debian-like image whose `python` is CPython 3.11+ with the venv
# module: the official python:3.11-slim-bookworm (default), or the base `make image`
# makes from Debian's archive with mmdebstrap (docs/install.md).
# VERSION: the project's version (webhook/__init__.py), for the version label; `make
# image` passes it. The build stops when it differs from the version of what was
# installed, so the label cannot lie; without it the label is empty.
# The secret `pip-ca` (optional): a CA bundle pip trusts inside the build, for a network
# whose TLS a proxy re-signs (`--secret id=pip-ca,src=FILE`, docker and podman alike).
# A secret is mounted for the one RUN that installs: it is in no layer and no history.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG VERSION
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/topospread
COPY requirements.lock pyproject.toml README.md ./
COPY webhook ./webhook
# Runtime dependencies exactly as pinned, each checked against its hash
# (requirements.lock, `make lock`), then the project itself without resolving again.
# Wheels only: the base has no compiler, and the final image must not need one.
RUN --mount=type=secret,id=pip-ca,required=false \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
    && /opt/topospread/bin/pip install --only-binary=:all: --require-hashes --no-deps \
        -r requirements.lock \
    && /opt/topospread/bin/pip install --no-deps . \
    && /opt/topospread/bin/python -m compileall -q -j 0 /opt/topospread/lib \
    && installed="$(/opt/topospread/bin/python -c \
        'from importlib.metadata import version; print(version("topospread"))')" \
    && if [ -n "$VERSION" ] && [ "$installed" != "$VERSION" ]; then \
        echo "build argument VERSION='$VERSION' but the project installed is $installed" >&2; \
        exit 1; fi \
    && /opt/topospread/bin/pip uninstall -q -y pip setuptools \
    && mkdir -p /rootfs/etc/topospread/certs

FROM ${PYTHON_IMAGE}
ARG VERSION
LABEL org.opencontainers.image.title="topospread" \
      org.opencontainers.image.description="Admission webhook for Pod topology spread constraints" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
# The base's own pip (the official images install one into the system Python) and the
# wheels the venv module would bootstrap one from: the running image installs nothing.
RUN if python -m pip --version >/dev/null 2>&1; then \
        python -m pip uninstall -q -y pip setuptools wheel; fi \
    && rm -rf /usr/share/python-wheels \
        /usr/local/lib/python3*/ensurepip/_bundled /usr/lib/python3*/ensurepip/_bundled
# The root filesystem is read-only in the cluster: gunicorn's control socket and
# worker files go to /tmp (an emptyDir there).
ENV PATH=/opt/topospread/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    XDG_RUNTIME_DIR=/tmp
COPY --from=build /opt/topospread /opt/topospread
# Where the Deployment mounts config.yaml and the certificates (mount points that exist
# even where a runtime cannot create them on a read-only root).
COPY --from=build /rootfs/etc/topospread /etc/topospread
# Numeric, so that runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["topospread"]
CMD ["serve", "--in-cluster", "--config", "/etc/topospread/config.yaml", \
     "--cert-dir", "/etc/topospread/certs", "--bind", "0.0.0.0:8443"]
