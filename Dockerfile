# servingprobe container image, in the Prometheus convention: the binary is
# built outside the image, static (CGO_ENABLED=0) with version ldflags, and
# copied into an image with nothing else in it. Build it with
#
#   scripts/docker-build.sh            # make build + podman/docker build
#
# which fills .build/ (the only build context .dockerignore lets through):
#   .build/linux-<arch>/servingprobe   the binary, from `make build`
#   .build/ca-certificates.crt         the build host's CA bundle, for HTTPS targets
#   .build/empty/                      an empty directory, to create the volume
#
# FROM scratch because CI cannot pull base images; the binary needs no libc,
# no shell and no tzdata (timestamps are UTC), only CA certificates and a
# passwd entry for the non-root user.
#
# Optional hftokenizers build (HF's Rust tokenizers through cgo, for tokenizer
# types the pure-Go loader does not cover; not built in CI, which cannot fetch
# crates or base images). It needs libtokenizers.a from
# github.com/daulet/tokenizers (built with cargo) and a libc, so it cannot be
# FROM scratch:
#
#   FROM golang:1.26-bookworm AS hfbuild
#   WORKDIR /src
#   COPY . .
#   # libtokenizers.a, built with `cargo build --release` in daulet/tokenizers
#   COPY libtokenizers.a /usr/local/lib/
#   # `make build` forces CGO_ENABLED=0, so call go build; pass the same
#   # -X github.com/prometheus/common/version.* ldflags as the Makefile.
#   RUN CGO_ENABLED=1 CGO_LDFLAGS="-L/usr/local/lib" go build -tags hftokenizers \
#       -trimpath -ldflags "-X github.com/prometheus/common/version.Version=${VERSION}" \
#       -o /out/servingprobe ./cmd/servingprobe
#   FROM gcr.io/distroless/cc-debian12:nonroot
#   COPY --from=hfbuild /out/servingprobe /bin/servingprobe
#   # ...then the same COPY of the config, VOLUME, USER, EXPOSE, ENTRYPOINT
#   # and CMD lines as below.
#
# Check that the result links: `ldd /bin/servingprobe` lists only libc, libm,
# libgcc_s and libstdc++ (all in distroless/cc).

FROM scratch

ARG ARCH=amd64
ARG OS=linux
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown

LABEL org.opencontainers.image.title="servingprobe" \
      org.opencontainers.image.description="Prometheus exporter, continuous prober and benchmark client for LLM inference servers" \
      org.opencontainers.image.url="https://github.com/servingprobe/servingprobe" \
      org.opencontainers.image.source="https://github.com/servingprobe/servingprobe" \
      org.opencontainers.image.documentation="https://github.com/servingprobe/servingprobe/tree/main/docs" \
      org.opencontainers.image.vendor="servingprobe" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"

COPY deploy/image/passwd deploy/image/group /etc/
COPY .build/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY .build/${OS}-${ARCH}/servingprobe /bin/servingprobe
COPY deploy/servingprobe.yml /etc/servingprobe/servingprobe.yml
# The results directory (bench.results_dir in the default config), writable by
# the non-root user. Mount a persistent volume here to keep bench results.
COPY --chown=65534:65534 .build/empty/ /var/lib/servingprobe/

# nobody:nobody, numeric so that runAsNonRoot can verify it without a passwd lookup.
USER 65534:65534
WORKDIR /var/lib/servingprobe
VOLUME ["/var/lib/servingprobe"]
EXPOSE 9775
ENTRYPOINT ["/bin/servingprobe"]
CMD ["serve", "--config.file=/etc/servingprobe/servingprobe.yml"]
