#!/usr/bin/env bash
# Installs ratelimit for action.yml: a release archive, checked against
# its published sha256 checksums, or `go install` of the action's ref.
# The version input is "source", "latest" or a release version
# (v?MAJOR.MINOR.PATCH[-pre]); anything else is refused before any
# network access, so it can never name a URL outside the releases.
set -euo pipefail
version="${INPUT_VERSION:-source}"
semver='^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
case "$version" in
source | latest) ;;
*)
	if ! [[ "$version" =~ $semver ]]; then
		printf 'ratelimit: version %q is not a release version; use latest, source or one such as v1.4.0 (v?MAJOR.MINOR.PATCH[-pre])\n' "$version" >&2
		exit 2
	fi
	;;
esac
bin="${RUNNER_TEMP:-/tmp}/ratelimit-bin"
mkdir -p "$bin"
if [ "$version" = source ]; then
	ref="${ACTION_REF:-main}"
	GOBIN="$bin" go install "github.com/ratelimit-dev/ratelimit@${ref}"
else
	case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "ratelimit: no release for $(uname -s)" >&2; exit 2 ;; esac
	case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "ratelimit: no release for $(uname -m)" >&2; exit 2 ;; esac
	if [ "$version" = latest ]; then
		# the releases page redirects to the newest tag: .../releases/tag/vX.Y.Z
		url="$(curl -fsSLI -o /dev/null -w '%{url_effective}' "${GH_REPO_URL}/releases/latest")"
		version="${url##*/releases/tag/}"
		if [ "$version" = "$url" ] || ! [[ "$version" =~ $semver ]]; then
			echo "ratelimit: the latest release could not be read from ${GH_REPO_URL}/releases/latest; pass a version such as v1.4.0" >&2
			exit 2
		fi
	fi
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
