# authgate service image. Build: docker build -t authgate .
# Stage 1 compiles TypeScript; stage 2 holds production dependencies and dist/ only.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` development dependency (a Node.js 24 for npm scripts on older
# machines) is not needed in an image that already has Node.js 24.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:24-slim
ENV NODE_ENV=production
# Two malloc arenas instead of glibc's eight per core: V8's compiler and collector threads each
# grew an arena of their own under load, about 15 MiB of RSS kept after it (docs/decisions.md, D146).
# Kept for a process started without the preload below.
ENV MALLOC_ARENA_MAX=2
# jemalloc, whose background thread gives freed pages back to the system: glibc kept 30 MiB of the
# 5,000 idle connections' parser and handle memory after they closed, free but between pages in
# use, where it gives nothing back (docs/decisions.md, D180). Freed pages go back after a second,
# not jemalloc's default ten: a 10 MB transfer's buffers no longer stay resident for 10 s after
# it (D276).
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 \
  && ln -s "$(dpkg -L libjemalloc2 | grep '/libjemalloc\.so\.2$')" /usr/local/lib/libjemalloc.so.2 \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 MALLOC_CONF=background_thread:true,dirty_decay_ms:1000
COPY --from=build /app/dist ./dist
COPY bin ./bin
USER node
EXPOSE 8080
# Liveness of authgate itself (not the backend's health): see AUTHGATE_LIVENESS_PATH.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+(process.env.AUTHGATE_LIVENESS_PATH||'/livez')).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and receives SIGTERM itself (no npm or shell in between): graceful shutdown.
# The young generation held at 8 MiB semi-spaces: V8 sizes it from the host's memory (to 128 MB on
# a 24 GB host) and RSS under load follows it; 8 MiB keeps a loaded process under 150 MB for about
# 1 % more CPU per request (docs/decisions.md, D166).
CMD ["node", "--max-semi-space-size=8", "bin/authgate.js"]
