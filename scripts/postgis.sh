#!/usr/bin/env bash
# Start the local PostgreSQL/PostGIS server and load the demo town into it.
#
#   scripts/postgis.sh            start (if needed) and seed (if the data changed)
#
# Database geogpt_demo, role geogpt/geogpt on 127.0.0.1:5432.  Idempotent and
# quick when everything is already in place.  Needs root or sudo (the server
# runs as the postgres user).
set -euo pipefail

# The PostgreSQL that has PostGIS installed (15 on Debian 12, 17 on Debian 13; scripts/debian_packages.sh).
PG_VERSION=${GEOGPT_PG_VERSION:-$({ ls /usr/share/postgresql/*/extension/postgis.control 2>/dev/null || true; } | sed 's|/usr/share/postgresql/\([0-9]*\)/.*|\1|' | sort -n | tail -n 1)}
[ -n "$PG_VERSION" ] || { echo "PostGIS is not installed (make system installs it)" >&2; exit 1; }
PG_PORT=${GEOGPT_PG_PORT:-5432}
DB=geogpt_demo
ROLE=geogpt
PASSWORD=geogpt
REPO=$(cd "$(dirname "$0")/.." && pwd)
GPKG=${GEOGPT_DEMO_GPKG:-$REPO/demo/elvbury.gpkg}
STAMP=$REPO/.stamps/postgis-seed

run_as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }
psql_admin() { as_postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qtAX "$@"; }

if ! pg_lsclusters -h | awk '{print $1"/"$2}' | grep -qx "$PG_VERSION/main"; then
    run_as_root pg_createcluster "$PG_VERSION" main --port "$PG_PORT"
fi
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" '$1==v && $2=="main" {print $4}' | grep -q online; then
    run_as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" main start
fi
for _ in $(seq 1 50); do
    pg_isready -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.2
done
pg_isready -q -h 127.0.0.1 -p "$PG_PORT" || { echo "PostgreSQL did not start on port $PG_PORT" >&2; exit 1; }

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'"
fi
# A second role that may connect but reads only what it is granted (for permission tests).
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}_reader'")" != 1 ]; then
    psql_admin -c "CREATE ROLE ${ROLE}_reader LOGIN PASSWORD 'reader'"
fi
# A superuser role for the SQL attack tests (tests/qgis/test_sql_attacks.py), where permissions no longer help.
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}_super'")" != 1 ]; then
    psql_admin -c "CREATE ROLE ${ROLE}_super SUPERUSER LOGIN PASSWORD 'super'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    psql_admin -c "CREATE DATABASE $DB OWNER $ROLE"
fi
psql_admin -d "$DB" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS postgis"
# Place names: trigram similarity and accent folding (find_places works without them, less well).
psql_admin -d "$DB" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS pg_trgm; CREATE EXTENSION IF NOT EXISTS unaccent"

if [ ! -f "$STAMP" ] || [ "$GPKG" -nt "$STAMP" ] || [ "$(psql_admin -d "$DB" -c "SELECT to_regclass('public.schools') IS NOT NULL")" != t ]; then
    ogr2ogr -f PostgreSQL "PG:host=127.0.0.1 port=$PG_PORT dbname=$DB user=$ROLE password=$PASSWORD" "$GPKG" \
        -overwrite -lco GEOMETRY_NAME=geom -lco FID=fid -lco SPATIAL_INDEX=GIST
    # Statistics now, so that describing tables does not depend on autovacuum's timing.
    psql_admin -d "$DB" -c "ANALYZE"
    mkdir -p "$(dirname "$STAMP")"
    touch "$STAMP"
fi
echo "PostGIS ready: host=127.0.0.1 port=$PG_PORT dbname=$DB user=$ROLE"
