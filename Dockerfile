# apkpatch in a container: a build stage with the Swift toolchain and the -dev packages, then a slim runtime
# image holding the static binary (and libzip, which `apkpatch unpack` loads when it extracts).
#
#   docker build --build-arg APKPATCH_COMMIT=$(git rev-parse --short=12 HEAD) -t apkpatch .
#   docker run --rm -v "$PWD:/work" -e KS_B64 -e KS_PASS apkpatch \
#       sign --ks-base64 env:KS_B64 --ks-pass env:KS_PASS --out app-signed.apk app.apk
#
# Pin the base images by digest (FROM image@sha256:…) in a release pipeline; the tags below name the versions.

FROM swift:6.3.1-bookworm AS build
ARG APKPATCH_COMMIT=unknown
# Debian stable's packages, unpinned on purpose: bookworm only takes security fixes, and exact versions would stop
# building as soon as one is superseded.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends make pkg-config libzip-dev libssl-dev zlib1g-dev libdeflate-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# No .git in the build context: the commit comes from the build argument.
RUN make build GIT_COMMIT="$APKPATCH_COMMIT" GIT_DIRTY= \
    && strip --strip-all .build/release/apkpatch \
    && .build/release/apkpatch --version

FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libzip4 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 apkpatch
COPY --from=build /src/.build/release/apkpatch /usr/local/bin/apkpatch
USER 10001
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/apkpatch"]
CMD ["--help"]
