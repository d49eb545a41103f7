#!/usr/bin/env bash
# DistAlgo side by side: runs one of pyDistAlgo 1.1.0's own examples with N processes, for the
# bench to compare coordlab against (interpreter start-up included, as a user would run it).
#
#   scripts/distalgo.sh EXAMPLE N [ARG...]
#                                   run da/examples/EXAMPLE/orig.da with N processes and the
#                                   example's own further arguments (e.g. crleader 50;
#                                   ramutex 20 20 and lamutex 20 20: 20 requests each);
#                                   installs first if needed
#   scripts/distalgo.sh --install   install pyDistAlgo 1.1.0 under Python 3.7 (via pyenv) into target/distalgo
#   scripts/distalgo.sh --check     exit 0 when installed, 1 when not (installs nothing)
#
# DistAlgo 1.1.0 needs Python 3.7 exactly. The virtualenv goes to target/distalgo (or
# $COORDLAB_DISTALGO). Exit status 3: it cannot be installed here (no Python 3.7 and no pyenv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${COORDLAB_DISTALGO:-$ROOT/target/distalgo}"
PY_VERSION=3.7

installed() {
    [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import da, sys; sys.exit(0 if da.__version__ == "1.1.0" else 1)' 2>/dev/null
}

find_python37() {
    # (pyenv's shim answers to `command -v` even when it cannot run that version: try it.)
    if "python$PY_VERSION" --version >/dev/null 2>&1; then
        command -v "python$PY_VERSION"
        return
    fi
    local pyenv
    pyenv="$(command -v pyenv || true)"
    [ -z "$pyenv" ] && [ -x "$HOME/.pyenv/bin/pyenv" ] && pyenv="$HOME/.pyenv/bin/pyenv"
    if [ -z "$pyenv" ]; then
        echo "distalgo.sh: no python$PY_VERSION and no pyenv to install it; see https://github.com/pyenv/pyenv" >&2
        exit 3
    fi
    local root version
    root="$("$pyenv" root)"
    version="$(ls "$root/versions" 2>/dev/null | grep -E "^$PY_VERSION\.[0-9]+$" | sort -V | tail -1 || true)"
    if [ -z "$version" ]; then
        echo "distalgo.sh: building Python $PY_VERSION with pyenv (several minutes)..." >&2
        version="$("$pyenv" install --list | tr -d ' ' | grep -E "^$PY_VERSION\.[0-9]+$" | sort -V | tail -1)"
        "$pyenv" install -s "$version" >&2 || { echo "distalgo.sh: pyenv could not build Python $version" >&2; exit 3; }
    fi
    echo "$root/versions/$version/bin/python"
}

install() {
    installed && return 0
    local py
    py="$(find_python37)"
    echo "distalgo.sh: installing pyDistAlgo 1.1.0 under $("$py" --version 2>&1) into $VENV" >&2
    "$py" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check pyDistAlgo==1.1.0 >&2
    installed || { echo "distalgo.sh: pyDistAlgo 1.1.0 did not install" >&2; exit 3; }
}

case "${1:-}" in
    --check) installed ;;
    --install) install ;;
    ""|-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
        example="$1"
        n="${2:?usage: scripts/distalgo.sh EXAMPLE N}"
        install
        spec="$("$VENV/bin/python" -c 'import da, os; print(os.path.dirname(da.__file__))')/examples/$example/orig.da"
        if [ ! -f "$spec" ]; then
            echo "distalgo.sh: DistAlgo has no example '$example' (known: $(ls "$(dirname "$(dirname "$spec")")" | grep -v '^__' | tr '\n' ' '))" >&2
            exit 2
        fi
        exec "$VENV/bin/python" -m da "$spec" "$n" "${@:3}"
        ;;
esac
