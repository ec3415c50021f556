#!/usr/bin/env bash
# Installs ratelimit for action.yml: a release archive, checked against
# its published sha256 checksums, or `go install` of the action's ref.
set -euo pipefail
version="${INPUT_VERSION:-source}"
bin="${RUNNER_TEMP:-/tmp}/ratelimit-bin"
mkdir -p "$bin"
if [ "$version" = source ]; then
	ref="${ACTION_REF:-main}"
	GOBIN="$bin" go install "github.com/ratelimit-dev/ratelimit@${ref}"
else
	case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "ratelimit: no release for $(uname -s)" >&2; exit 2 ;; esac
	case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "ratelimit: no release for $(uname -m)" >&2; exit 2 ;; esac
	v="${version#v}"
	base="${GH_REPO_URL}/releases/download/v${v}"
	archive="ratelimit_${v}_${os}_${arch}.tar.gz"
	tmp="$(mktemp -d)"
	curl -fsSL -o "$tmp/$archive" "$base/$archive"
	curl -fsSL -o "$tmp/sums.txt" "$base/ratelimit_${v}_checksums.txt"
	(cd "$tmp" && grep " ${archive}\$" sums.txt | sha256sum -c -)
	tar -xzf "$tmp/$archive" -C "$bin" ratelimit
	rm -rf "$tmp"
fi
echo "$bin" >> "${GITHUB_PATH:-/dev/null}"
"$bin/ratelimit" version
