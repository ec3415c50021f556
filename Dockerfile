# ratelimit in a container: a static binary on a distroless base, run as
# the non-root user 65532.
#
#   docker build -t ratelimit .
#   docker run --rm ratelimit version
#   docker run --rm --network host ratelimit load --target http://127.0.0.1:8011/hello --rate 20/s
#
# VERSION stamps the build (ratelimit version); by default the Go
# toolchain stamps the VCS tag of the checkout, when .git is in the
# build context.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/ratelimit-dev/ratelimit/version.Override=${VERSION}" \
      -o /out/ratelimit .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ratelimit /ratelimit
USER 65532:65532
ENTRYPOINT ["/ratelimit"]
CMD ["--help"]
