# Faregate: the core and every plugin under plugins/ in one image (see docs/container.md).
#
#   docker build -t faregate .
#   docker run -p 3000:3000 -v faregate-data:/data faregate
#
# The base image is pinned to a patch release. Pinning its digest as well is recommended for
# reproducible builds: PYTHON_IMAGE=python:3.12.13-slim-trixie@sha256:<digest>, the digest from
# `docker buildx imagetools inspect python:3.12.13-slim-trixie` (pass it with --build-arg or
# edit it here; bump both when Python or Debian publish security fixes).
ARG PYTHON_IMAGE=python:3.12.13-slim-trixie

# --- manifests: only the distributions' pyproject.toml files ----------------------------------
# Their content alone decides whether the dependency layer below is rebuilt: an edit to a
# source file changes nothing here, so the (slow) dependency install stays cached. Every
# plugin under plugins/<kind>/<name>/ is included without listing it.
FROM ${PYTHON_IMAGE} AS manifests
WORKDIR /src
COPY core/ core/
COPY plugins/ plugins/
RUN find . -type f ! -name pyproject.toml -delete \
    && find . -depth -type d -empty -delete

# --- builder: a virtual environment with the dependencies, then Faregate itself -------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY --from=manifests /src/ ./
# the third-party dependencies of every distribution (the faregate* ones are built below)
RUN python -c "import glob, tomllib; \
deps = {d for f in glob.glob('core/pyproject.toml') + glob.glob('plugins/*/*/pyproject.toml') \
        for d in tomllib.load(open(f, 'rb'))['project'].get('dependencies', []) \
        if not d.startswith('faregate')}; \
open('/tmp/requirements.txt', 'w').write('\n'.join(sorted(deps)) + '\n')" \
    && pip install -r /tmp/requirements.txt
# the sources, then Faregate's own distributions (no dependency left to fetch)
COPY core/ core/
COPY plugins/ plugins/
RUN pip install --no-deps ./core $(for d in plugins/*/*/; do [ -f "$d/pyproject.toml" ] && echo "./$d"; done) \
    && faregate --version

# --- final: the virtual environment on a slim base, as an unprivileged user ------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="Faregate" \
      org.opencontainers.image.description="An open LLM API gateway" \
      org.opencontainers.image.source="https://github.com/faregate/faregate" \
      org.opencontainers.image.licenses="Apache-2.0"
# fixed ids, so a volume's ownership is the same in every image version and on every host
RUN groupadd --system --gid 10001 faregate \
    && useradd --system --uid 10001 --gid faregate --home-dir /app --no-create-home --shell /usr/sbin/nologin faregate \
    && mkdir -p /app /data \
    && chown faregate:faregate /app /data \
    && chmod 0700 /data
COPY --from=builder /opt/venv /opt/venv
COPY LICENSE /app/LICENSE
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FAREGATE_DATA_DIR=/data \
    FAREGATE_HOST=0.0.0.0
WORKDIR /app
USER faregate:faregate
# SQLite database and generated secrets when no external database / secrets are configured
VOLUME ["/data"]
EXPOSE 3000
# /healthz: the process answers (no I/O). No curl in the slim image: Python's urllib.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; port = os.environ.get('FAREGATE_PORT') or os.environ.get('PORT') or '3000'; urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=4).close()"]
ENTRYPOINT ["faregate"]
CMD ["serve"]
