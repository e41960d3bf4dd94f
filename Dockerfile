# syntax=docker/dockerfile:1

# ---- build: compile TypeScript (src and migrations) to dist/, build the web console to console/dist/ ----
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY migrations ./migrations
COPY console ./console
RUN npm run build:console && npm run build

# ---- dependencies: production packages only (no tsx, vitest, testcontainers, TypeScript or Biome) ----
FROM node:24-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# Biome's binaries are optional dependencies (so that npm ci works on every platform): leave them out too.
# No scripts: the console is built in the build stage.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- runtime: compiled code, production packages, a non-root user ----
FROM node:24-bookworm-slim AS runtime
# python3, venv and pip build and run Python crews; bubblewrap is the runners' sandbox (RUNNER_SANDBOX), slirp4netns
# and iproute2 their isolated network (RUNNER_NETWORK); tini reaps orphaned processes.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap slirp4netns iproute2 tini \
    ca-certificates \
  && rm -rf /var/lib/apt/lists/*
# uv installs Python builds' dependencies (docs/deploying.md): from the package index into a folder of its own, on
# PATH, so that no build has to install it first.
RUN python3 -m venv /opt/crewd-build-tools \
  && /opt/crewd-build-tools/bin/pip install --no-cache-dir --only-binary=:all: uv \
  && ln -s /opt/crewd-build-tools/bin/uv /usr/local/bin/uv \
  && uv --version
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/var/lib/crewd
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
COPY package.json ./
# The `crewd` command, running the compiled dist/ (no tsx here), on PATH.
COPY bin ./bin
RUN ln -s /app/bin/crewd.mjs /usr/local/bin/crewd
COPY examples ./examples
# The crewd Python runner, installed into every Python version's environment by builds.
COPY runners/python ./runners/python
# The empty embedded-database cluster that a new DATA_DIR starts from (node_modules/.cache/crewd), made here once:
# node_modules is not writable by the user below, and PGlite's initdb would cost each new volume about 7 s of CPU.
RUN node -e "import('/app/dist/src/db/connect.js').then((m) => m.connectPglite({ dataDir: '/tmp/cluster/db' })).then((h) => h.close())" \
  && rm -rf /tmp/cluster && test -n "$(ls node_modules/.cache/crewd)"
RUN mkdir -p /var/lib/crewd && chown node:node /var/lib/crewd
USER node
VOLUME ["/var/lib/crewd"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/src/server.js"]
