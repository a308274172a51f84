#!/usr/bin/env bash
# The README's two commands go through here. On first use (or when
# pyproject.toml changed) it creates the virtual environment and installs
# lowerline into it, then:
#   bash tools/dev.sh test          ruff, mypy, the lit suite and pytest (2 workers)
#   bash tools/dev.sh test --long   the same, then the slow tier (pytest marker
#                                   `long`: the whole conformance zoo)
#   bash tools/dev.sh ARGS...       the `lowerline` command, e.g. `run FILE.mlir`
# LOWERLINE_VENV chooses where the environment lives (default: .venv here).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${LOWERLINE_VENV:-$root/.venv}"
stamp="$venv/.lowerline-installed"
python="${PYTHON:-python3}"

# System packages the tests need (cross compiler, qemu, a headless browser),
# listed one per line in tools/apt-packages.txt. A fresh machine has none of
# them; they are installed with apt-get as root (or through sudo).
system_packages() {
  local missing=()
  local pkg
  while read -r pkg; do
    pkg="${pkg%%#*}"
    pkg="${pkg//[[:space:]]/}"
    [ -n "$pkg" ] || continue
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done <"$root/tools/apt-packages.txt"
  [ "${#missing[@]}" -gt 0 ] || return 0
  echo "installing system packages: ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  local log
  log="$(mktemp)"
  if ! {
    "${sudo[@]}" apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q \
        --no-install-recommends "${missing[@]}"
  } >"$log" 2>&1; then
    cat "$log" >&2
    echo "installing system packages failed: ${missing[*]}" >&2
    exit 1
  fi
  rm -f "$log"
}

setup() {
  if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "lowerline needs Python 3.11 (the pinned MLIR and torch wheels are cp311); set PYTHON=" >&2
    exit 1
  fi
  echo "setting up $venv (first run only; takes a minute or two)" >&2
  "$python" -m venv "$venv"
  # pip's and setuptools' notes go to a log, shown only if the install fails.
  local log="$venv/install.log"
  if ! {
    "$venv/bin/python" -m pip install -q --upgrade pip &&
      # torch==2.13.0 is pinned in pyproject.toml: that exact CPU wheel
      # installs without a large download.
      "$venv/bin/python" -m pip install -q -e "$root[test]"
  } >"$log" 2>&1; then
    cat "$log" >&2
    echo "installing lowerline into $venv failed (log: $log)" >&2
    exit 1
  fi
  touch "$stamp"
}

system_packages
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  setup
fi

if [ "${1:-}" = "test" ]; then
  shift
  long=0
  if [ "${1:-}" = "--long" ]; then
    long=1
    shift
  fi
  cd "$root"
  "$venv/bin/ruff" check python passes tools dialects test bench
  "$venv/bin/ruff" format --check python passes tools dialects test bench
  "$venv/bin/python" -m lowerline.tools.typecheck
  "$venv/bin/lit" -sv test "$@"
  "$venv/bin/python" -m pytest -q -n 2 python/tests
  if [ "$long" = 1 ]; then
    # pyproject.toml's addopts deselect `long`; this later -m selects it.
    "$venv/bin/python" -m pytest -q -n 2 -m long python/tests
  fi
else
  exec "$venv/bin/lowerline" "$@"
fi
