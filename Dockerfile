# qtts serve in a container: docs/deploy.md ("Docker") has build and run examples.
#   docker build -t qtts .
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" -v qtts-voices:/voices qtts
# One binary built from this tree on Debian 12; the runtime image holds it,
# the shared libraries it links and curl for the health check, and nothing else.

# ---- builder: the build packages of scripts/deps.sh (no test-only tools) ----
FROM debian:bookworm-slim AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libsndfile1-dev libsoxr-dev libpcre2-dev libutf8proc-dev libicu-dev libcjson-dev libmicrohttpd-dev librubberband-dev \
      libavcodec-dev libavformat-dev libavutil-dev libzip-dev libxml2-dev \
      libcurl4-openssl-dev libssl-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# .dockerignore keeps build folders, .git and deploy/ out of the context.
COPY . .
# Only the qtts target: the tests and benchmarks are configured (the top-level
# CMakeLists.txt adds them) but not built. No -march: the kernels pick
# AVX2/AVX-512 at run time, so the image runs on any x86-64.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build -j"$(nproc)" --target qtts \
 && install -D -m 0755 -s /build/qtts /out/qtts \
 && /out/qtts --version

# ---- runtime ----
FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
# The libraries `readelf -d qtts` lists as NEEDED, by their Debian 12 packages
# (libssl3 for libcrypto), and libav*, which AAC/M4A output opens at run time;
# CA certificates for `qtts download`, curl for the health check (qtts has no
# client subcommand).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libsndfile1 libsoxr0 libpcre2-8-0 libutf8proc2 libicu72 libcjson1 libmicrohttpd12 librubberband2 \
      libcurl4 libssl3 libavcodec59 libavformat59 libavutil57 libzip4 libxml2 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 qtts \
 && useradd --uid 10001 --gid qtts --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin qtts \
 && mkdir -p /models /voices \
 && chown 10001:10001 /voices
COPY --from=build /out/qtts /usr/local/bin/qtts

# Voices persist in /voices (a volume shared by every replica); `qtts download
# NAME` run in this image stores models under /models, where `-m NAME` finds them.
# MALLOC_ARENA_MAX=2: glibc otherwise keeps one arena per HTTP thread, and large
# request bodies left RSS at 909 MB instead of 127 MB (docs/server.md).
ENV QTTS_VOICES_DIR=/voices \
    QTTS_HOME=/models \
    MALLOC_ARENA_MAX=2
# A new named volume copies /voices' owner from the image, so uid 10001 can write it.
VOLUME ["/models", "/voices"]
USER 10001:10001
EXPOSE 8080
# The server drains on SIGTERM: it stops taking requests (503, /health says
# "draining"), lets in-flight ones finish for up to --drain-timeout (30 s),
# then exits 0. Give `docker stop -t` / stop_grace_period more than that.
STOPSIGNAL SIGTERM
# /health needs no API key (it answers 503 while the server drains).
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/health || exit 1
# --reuse-port: a server restarted in the same network namespace (restart
# policy, a pod's container restart) can listen again at once, while the
# kernel still holds its previous connections in TIME_WAIT. Nothing else
# shares a container's port, so it cannot split traffic with a stranger.
ENTRYPOINT ["qtts", "serve", "--host", "0.0.0.0", "--port", "8080", "--reuse-port"]
# Replace to pick the model or add flags, e.g. `-m /models/Qwen3-TTS-12Hz-0.6B-Base --threads 8`.
CMD ["-m", "/models/model"]
