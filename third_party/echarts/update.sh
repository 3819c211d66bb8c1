#!/usr/bin/env bash
# update.sh fetches the pinned Apache ECharts release from the npm registry
# (npm pack, no install scripts run) and copies its minified browser bundle,
# LICENSE, NOTICE and bundled-code licenses here, checking the sha256 of
# both the package tarball and the bundle.
#
#   ./update.sh            fetch and install the pinned version
#   ./update.sh --check    only check the committed echarts.min.js
#
# To move to another version: change VERSION, run with the new version's
# hashes left empty to print them, review the diff, then pin the printed
# hashes here, in README.md and in echarts_test.go.
set -euo pipefail

VERSION=5.4.3
TGZ_SHA256=89f6b509a83b3694645a8ec0dc8808999bb96610eac9e718fbda4726bb694eaf
JS_SHA256=1156429a16a38cb8604dcc6518c19406d4226142d908f8edd2e3531443c54d19

here=$(cd "$(dirname "$0")" && pwd)

check() { # check FILE WANT
	local got
	got=$(sha256sum "$1" | cut -d' ' -f1)
	if [[ -z "$2" ]]; then
		echo "sha256 $1: $got (not pinned)" >&2
		return 1
	fi
	if [[ "$got" != "$2" ]]; then
		echo "sha256 mismatch for $1: got $got, want $2" >&2
		return 1
	fi
}

if [[ "${1:-}" == "--check" ]]; then
	check "$here/echarts.min.js" "$JS_SHA256"
	echo "echarts.min.js is echarts@$VERSION"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "echarts@$VERSION" >/dev/null)
check "$tmp/echarts-$VERSION.tgz" "$TGZ_SHA256"
tar -xzf "$tmp/echarts-$VERSION.tgz" -C "$tmp" \
	package/dist/echarts.min.js package/LICENSE package/NOTICE package/licenses/LICENSE-d3
check "$tmp/package/dist/echarts.min.js" "$JS_SHA256"
if grep -qi '</script' "$tmp/package/dist/echarts.min.js"; then
	echo "echarts.min.js contains </script; it cannot be inlined" >&2
	exit 1
fi
cp "$tmp/package/dist/echarts.min.js" "$tmp/package/LICENSE" "$tmp/package/NOTICE" "$here/"
cp "$tmp/package/licenses/LICENSE-d3" "$here/LICENSE-d3"
echo "installed echarts@$VERSION into $here"
