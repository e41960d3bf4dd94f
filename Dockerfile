# syntax=docker/dockerfile:1

# ---- build: compile TypeScript to dist/, build the web console to console/dist/ ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY migrations ./migrations
COPY console ./console
RUN npm run build:console && npm run build && npm prune --omit=dev

# ---- runtime: production dependencies, compiled code, a non-root user ----
FROM node:20-bookworm-slim AS runtime
# python3 lets crews written in Python (standard library) run; tini reaps runner processes.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/var/lib/crewd
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
COPY package.json ./
COPY examples ./examples
RUN mkdir -p /var/lib/crewd && chown node:node /var/lib/crewd
USER node
VOLUME ["/var/lib/crewd"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/src/server.js"]
