# The service image. Node 24 comes from the base image, so the `node` npm package (which exists
# to give hosts with an older system Node a newer one) is not needed: install scripts are
# skipped and the entry point calls the image's node directly.
FROM node:24-bookworm-slim

# MALLOC_MMAP_THRESHOLD_ and the heap flags below: see docs/operations.md, "Memory" (the same as
# package.json's start script).
ENV NODE_ENV=production \
    MALLOC_MMAP_THRESHOLD_=131072 \
    PORT=4000 \
    DATA_DIR=/var/lib/envelope-service

# qpdf decrypts owner-password-only PDFs on upload (src/domain/document/pdf-decrypt.ts).
RUN apt-get update && apt-get install -y --no-install-recommends qpdf && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY mikro-orm.config.ts tsconfig.json ./
COPY src ./src

# seal/ exists in the image so that a volume mounted there (shared by replicas, docker-compose.yml)
# starts owned by the service's user.
RUN mkdir -p "$DATA_DIR/seal" && chown -R node:node "$DATA_DIR"
USER node
VOLUME ["/var/lib/envelope-service"]
EXPOSE 4000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=256", "--expose-gc", "src/main.ts"]
