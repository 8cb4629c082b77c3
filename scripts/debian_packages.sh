#!/usr/bin/env bash
# The Debian packages make test needs, named for one Debian release (default: this machine's).
#
#   scripts/debian_packages.sh            e.g. on Debian 12: ... postgresql-15-postgis-3 ...
#   scripts/debian_packages.sh trixie     the list for Debian 13 (make test-matrix builds its chroots from it)
#
# Only PostGIS's package differs between releases: named with the PostgreSQL major version on the ones
# listed (bookworm 15, trixie 17), Debian's postgresql-postgis metapackage (the release's default) elsewhere.
set -euo pipefail
codename=${1:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
case "$codename" in
    bookworm) postgis=postgresql-15-postgis-3 ;;
    trixie) postgis=postgresql-17-postgis-3 ;;
    *) postgis=postgresql-postgis ;;
esac
echo qgis python3-qgis qgis-providers gdal-bin python3-gdal python3-psycopg2 python3-venv python3-pip \
    "$postgis" xvfb xauth qttools5-dev-tools nodejs
