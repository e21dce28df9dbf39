#!/usr/bin/env bash
# Installs what the test suite needs that Go does not bring: the shells the
# shell-pane tests type into, chattr for the fault suite, Chromium for the
# cockpit's browser tests (found as $CHROME or chromium on PATH), node and
# npm, tmux (the real-CLI suite attaches to panes in it as a person
# would); then the agent CLIs pinned in scripts/agent-clis.txt, with npm,
# into ${HM_CLI_CACHE:-$HOME/.cache/hm/agent-clis}/<package>@<version>
# (outside the tree) for the real-CLI suite (internal/realcli). Each apt entry is
# "command:debian-package", or "py.module:debian-package" for a Python
# module. Nothing is done when everything is present.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
needs=(bash:bash dash:dash zsh:zsh fish:fish ksh:ksh chattr:e2fsprogs chromium:chromium node:nodejs npm:npm tmux:tmux
	py.prompt_toolkit:python3-prompt-toolkit)

# have says whether a needs entry's command (or Python module, in python3
# on PATH or Debian's /usr/bin/python3) is present.
have() {
	case $1 in
	py.*)
		local py
		for py in python3 /usr/bin/python3; do
			command -v "$py" >/dev/null 2>&1 && "$py" -c "import ${1#py.}" 2>/dev/null && return 0
		done
		return 1
		;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

apt_deps() {
	local missing=() n cmd pkg
	for n in "${needs[@]}"; do
		cmd=${n%%:*} pkg=${n##*:}
		have "$cmd" || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0

	echo "make deps: installing ${missing[*]}" >&2
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "make deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
		exit 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || { echo "make deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	for n in "${needs[@]}"; do
		cmd=${n%%:*}
		have "$cmd" || { echo "make deps: $cmd still missing after install" >&2; exit 1; }
	done
}

# agent_clis installs every pinned CLI that is not in the cache yet. A
# package is installed into <dir>.partial and renamed, so an interrupted
# install is never taken for a present one.
agent_clis() {
	local cache=${HM_CLI_CACHE:-$HOME/.cache/hm/agent-clis} pkg ver bin dir todo=()
	while read -r pkg ver bin _; do
		case $pkg in '' | '#'*) continue ;; esac
		dir="$cache/$pkg@$ver"
		[ -x "$dir/node_modules/.bin/$bin" ] || todo+=("$pkg@$ver")
	done <"$here/agent-clis.txt"
	[ ${#todo[@]} -eq 0 ] && return 0

	echo "make deps: installing the agent CLIs ${todo[*]} with npm into $cache" >&2
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
		{ echo "make deps: node and npm are needed to install ${todo[*]} (Debian: apt-get install nodejs npm)" >&2; exit 1; }
	local major
	major=$(node -p 'process.versions.node.split(".")[0]')
	[ "$major" -ge 20 ] || { echo "make deps: node $(node --version) is too old: Gemini CLI needs node 20 or later" >&2; exit 1; }
	local spec log
	for spec in "${todo[@]}"; do
		dir="$cache/$spec"
		rm -rf "$dir.partial"
		mkdir -p "$dir.partial"
		log=$dir.partial/npm.log
		if ! npm install --prefix "$dir.partial" --no-audit --no-fund --no-update-notifier "$spec" >"$log" 2>&1; then
			echo "make deps: npm could not install $spec (is the registry $(npm config get registry) reachable?); npm said:" >&2
			tail -n 20 "$log" >&2
			exit 1
		fi
		rm -rf "$dir"
		mv "$dir.partial" "$dir"
	done
}

apt_deps
agent_clis
