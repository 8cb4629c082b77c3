#!/usr/bin/env bash
# Start QGIS with the plugin installed in the repository's own profile and the demo project open.
# QGIS's Python finds the plugin's dependencies in the project's virtual environment.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
SITE=$("$REPO/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PROFILES=${GEOGPT_PROFILES:-$REPO/.qgis-profile}
unset QT_QPA_PLATFORM
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
command=(qgis --profiles-path "$PROFILES" --profile geogpt --noversioncheck "$REPO/demo/elvbury.qgz" "$@")
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    echo "No display found: starting QGIS on a virtual screen (xvfb-run)." >&2
    exec xvfb-run -a -s "-screen 0 1600x1000x24" "${command[@]}"
fi
exec "${command[@]}"
