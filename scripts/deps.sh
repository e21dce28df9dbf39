#!/usr/bin/env bash
# Installs what the test suite needs that Go does not bring: the shells the
# shell-pane tests type into, chattr for the fault suite, and Chromium for
# the cockpit's browser tests (found as $CHROME or chromium on PATH). Each entry is
# "command:debian-package". Nothing is done when everything is present.
set -euo pipefail

needs=(bash:bash dash:dash zsh:zsh fish:fish ksh:ksh chattr:e2fsprogs chromium:chromium)

missing=()
for n in "${needs[@]}"; do
	cmd=${n%%:*} pkg=${n##*:}
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "make deps: installing ${missing[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
	echo "make deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "make deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for n in "${needs[@]}"; do
	cmd=${n%%:*}
	command -v "$cmd" >/dev/null 2>&1 || { echo "make deps: $cmd still missing after install" >&2; exit 1; }
done
