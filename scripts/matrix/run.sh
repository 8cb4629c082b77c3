#!/usr/bin/env bash
# make test-matrix: the whole test suite on other QGIS versions, each in a Debian chroot built from Debian's
# own packages, as a user of that release would install them.
#
#   scripts/matrix/run.sh                 every version below (in parallel, GEOGPT_MATRIX_JOBS=1: in turn)
#   scripts/matrix/run.sh 3.44            one version
#   GEOGPT_MATRIX_PYTEST="tests/unit -x" scripts/matrix/run.sh 3.40   other pytest arguments
#   scripts/matrix/run.sh --shell 3.40    a shell in that chroot (mounted, network shared), to look around
#
# Each chroot (debootstrap, then apt-get install of scripts/debian_packages.sh's list for that release) is
# cached under $GEOGPT_MATRIX_CACHE (/var/cache/geogpt-matrix), keyed by a hash of what goes into it, so
# only the first run on a machine builds it. The clone's files are copied into the chroot (rsync, so a
# second run copies only what changed) and set up there with the project's own `make setup`: a venv from
# the chroot's /usr/bin/python3 with --system-site-packages and the requirements from PyPI, with pins
# that keep that QGIS's numpy/GDAL/pyproj/PyQt (scripts/qgis_constraints.py); the venv stays in the
# cached chroot too. The tests then run in private namespaces (mount, pid, ipc, network): the chroot's own
# PostgreSQL/PostGIS listens on 127.0.0.1:5432 of its own loopback (never the host's server), Xvfb
# displays cannot clash with the host's, every mount goes away with the namespace even if this script is
# killed, and so does every process the tests leave behind. Needs root (debootstrap, chroot, mounts).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${GEOGPT_MATRIX_CACHE:-/var/cache/geogpt-matrix}
MIRROR=${GEOGPT_MATRIX_MIRROR:-http://deb.debian.org/debian}
JOBS=${GEOGPT_MATRIX_JOBS:-2}
RECIPE=1  # bump when the way a chroot is built changes, so cached chroots are rebuilt
# name  debootstrap-suite  apt-target-release  (the release QGIS comes from)
VERSIONS=(
    "3.40 trixie trixie"
    "3.44 trixie trixie-backports"
    "3.44-sid sid sid"  # Python 3.14; not in the default run (sid changes daily): scripts/matrix/run.sh 3.44-sid
)
DEFAULT_VERSIONS=(3.40 3.44)
# What the matrix itself needs in a chroot besides make test's packages.
EXTRA_PACKAGES="make rsync ca-certificates proj-bin locales-all"
SRC=/work/geogpt  # the clone's copy inside each chroot

log() { printf '[matrix %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }
# What CI's own output must show of a failed suite (the chroot's log is overwritten by the next run): the failed
# tests, or a crash's thread dump without the frames of pytest's own machinery, or the log's end.
report_failure() {
    grep -E '^(FAILED|ERROR) ' "$1" || true
    if grep -q 'Fatal Python error' "$1"; then
        # Each thread's stack is a paragraph: the crashed one, and those in the project's code (not the scripted
        # model server's idle connection threads, a dozen of them late in a suite).
        sed -n '/Fatal Python error/,$p' "$1" | grep -v -E '/(site-packages|dist-packages)/|^  File "<frozen' |
            awk -v RS= -v ORS='\n\n' '/Fatal Python error|Current thread/ ||
                (/\/work\/geogpt\// && !/harness\/model_server\.py/)' | head -n 200
    elif ! grep -q -E '^(FAILED|ERROR) ' "$1"; then
        tail -n 30 "$1"
    fi
}

[ "$(id -u)" = 0 ] || die "make test-matrix needs root (debootstrap, chroot and mounts); run it with sudo"
command -v debootstrap >/dev/null || "$REPO/scripts/install_system.sh" debootstrap
mkdir -p "$CACHE/logs"

version_line() {
    local line
    for line in "${VERSIONS[@]}"; do
        [ "${line%% *}" = "$1" ] && { echo "$line"; return; }
    done
    die "unknown version '$1' (known: $(printf '%s ' "${VERSIONS[@]%% *}"))"
}

# The chroot for one version: its path is keyed by everything that goes into it.
root_of() {
    local name=$1 suite=$2 target=$3 packages key
    packages="$("$REPO/scripts/debian_packages.sh" "$suite") $EXTRA_PACKAGES"
    key=$(printf '%s\n' "$RECIPE" "$suite" "$target" "$MIRROR" "$packages" | sha256sum | cut -c1-12)
    echo "$CACHE/qgis-$name-$suite-$key"
}

# Mount what a chroot needs. Called inside a private mount namespace (unshare --mount): whatever happens,
# the mounts end with it. Never on the host's own namespace.
mount_chroot() {
    local root=$1
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys" 2>/dev/null || mount --rbind -o ro /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mkdir -p "$root/mnt/src"
    mount --bind "$REPO" "$root/mnt/src"
    mount -o remount,bind,ro "$root/mnt/src"
    # pip's cache, shared by the chroots: a wheel compiled in one (llama-cpp-python) is reused by the others.
    mkdir -p "$CACHE/pip" "$root/mnt/pip-cache"
    mount --bind "$CACHE/pip" "$root/mnt/pip-cache"
    # The certificate authorities this machine added to its own trust store (none on most machines; a
    # TLS-inspecting proxy's elsewhere), so that pip in the chroot reaches PyPI as pip on the host does.
    if [ -d /usr/local/share/ca-certificates ]; then
        mkdir -p "$root/mnt/host-ca"
        mount --bind /usr/local/share/ca-certificates "$root/mnt/host-ca"
        mount -o remount,bind,ro "$root/mnt/host-ca"
    fi
}

# Safety net for the host namespace: nothing of ours should be mounted there, but if something is, unmount it.
unmount_leftovers() {
    local root=$1 point
    for point in $(awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$point" 2>/dev/null || true
    done
}

in_chroot() {  # in_chroot ROOT [--net] COMMAND...: run COMMAND (a shell script) in the chroot, mounted
    local root=$1 net=()
    shift
    if [ "$1" = --net ]; then net=(--net); shift; fi
    unshare --mount --pid --ipc --fork --kill-child "${net[@]}" /bin/bash -c '
        set -euo pipefail
        root=$1; repo=$2; net=$3; shift 3
        '"$(declare -f mount_chroot)"'
        REPO=$repo CACHE='"$CACHE"'
        [ "$net" = --net ] && ip link set lo up  # the namespace'"'"'s own loopback starts down
        mount_chroot "$root"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive PIP_CACHE_DIR=/mnt/pip-cache \
            /bin/bash -c "$1"
    ' matrix "$root" "$REPO" "${net[*]:-shared}" "$*"
}

build_root() {
    local name=$1 suite=$2 target=$3 root packages tmp
    root=$(root_of "$name" "$suite" "$target")
    [ -f "$root/.matrix-complete" ] && return 0
    packages="$("$REPO/scripts/debian_packages.sh" "$suite") $EXTRA_PACKAGES"
    tmp="$root.building"
    log "$name: building the chroot (debootstrap $suite, QGIS from $target) in $tmp"
    trap 'unmount_leftovers "$tmp"' EXIT
    unmount_leftovers "$tmp"
    rm -rf "$tmp"
    # debootstrap mounts /proc itself: in a private namespace, so nothing stays mounted if it fails.
    unshare --mount --fork debootstrap --variant=minbase --include=ca-certificates "$suite" "$tmp" "$MIRROR" \
        >"$CACHE/logs/$name-debootstrap.log" 2>&1 || die "$name: debootstrap failed, see $CACHE/logs/$name-debootstrap.log"
    {
        echo "deb $MIRROR $suite main"
        if [ "$suite" != sid ]; then  # sid has neither updates nor security suites
            echo "deb $MIRROR $suite-updates main"
            echo "deb ${MIRROR%/debian}/debian-security $suite-security main"
        fi
        [ "$target" != "$suite" ] && echo "deb $MIRROR $target main"
    } >"$tmp/etc/apt/sources.list"
    # A mirror that lags behind (sid's Release files are valid for a week only) is still what we want.
    echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/90matrix-mirror"
    printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"  # no service starts while installing
    chmod +x "$tmp/usr/sbin/policy-rc.d"
    in_chroot "$tmp" "apt-get update -q && apt-get install -y -q -t $target $packages" \
        >"$CACHE/logs/$name-apt.log" 2>&1 || die "$name: apt-get install failed, see $CACHE/logs/$name-apt.log"
    in_chroot "$tmp" "apt-get clean"
    echo "$packages" >"$tmp/.matrix-complete"
    trap - EXIT
    # Other builds of this version (older package lists) go; this one takes its place.
    find "$CACHE" -maxdepth 1 -name "qgis-$name-*" ! -name "$(basename "$root")" ! -name "$(basename "$tmp")" \
        -exec rm -rf {} +
    mv "$tmp" "$root"
    log "$name: chroot ready"
}

# Copy the clone in (only what changed; the venv, stamps and generated demo stay), then make setup.
prepare() {
    local name=$1 root=$2
    in_chroot "$root" "
        set -euo pipefail
        if [ -d /mnt/host-ca ]; then
            rsync -a --delete /mnt/host-ca/ /usr/local/share/ca-certificates/ && update-ca-certificates >/dev/null
        fi
        # What git ignores is never copied: it is made by a set-up (the host's may be running beside this one)
        # and the chroot makes its own, which --delete leaves in place.
        mkdir -p $SRC && rsync -a --delete --exclude=/.git --filter=':- .gitignore' /mnt/src/ $SRC/
        cd $SRC
        # What make test needs before pytest, less lint (the same on every version): setup, and the model server.
        make setup
        # llama-cpp-python's wheel is py3-none and built on the host's older glibc: the host's runs here too.
        # With GEOGPT_MATRIX_LLAMA_WAIT=FILE (.ci/run), the host is building it beside us: wait for the wheel,
        # or for FILE, which says the host's make test ended (then compile here, as without a host wheel).
        if grep -q '^llama:' Makefile; then
            if [ -n '${GEOGPT_MATRIX_LLAMA_WAIT:-}' ]; then
                until ls /mnt/src/.stamps/llama-wheels/llama_cpp_python-*.whl >/dev/null 2>&1 \
                    || [ -e '/mnt/src/${GEOGPT_MATRIX_LLAMA_WAIT:-}' ]; do sleep 5; done
            fi
            mkdir -p .stamps/llama-wheels
            cp /mnt/src/.stamps/llama-wheels/llama_cpp_python-*.whl .stamps/llama-wheels/ 2>/dev/null || true
            # One chroot compiles llama-cpp-python at a time; the next takes the wheel from the shared pip cache.
            flock /mnt/pip-cache/.llama.lock make llama
        fi
        .venv/bin/python -m tests.support.wheelhouse
    "
}

run_tests() {
    local name=$1 root=$2 pytest_args=${GEOGPT_MATRIX_PYTEST:-}
    rm -rf "${root:?}/tmp/"* "$root/tmp/".[!.]* 2>/dev/null || true
    in_chroot "$root" --net "
        set -euo pipefail
        cd $SRC
        # Debian made the cluster while the host's server held 5432 (so it took 5433); here 5432 is free.
        pg_lsclusters -h | while read -r version cluster _; do pg_conftool \$version \$cluster set port 5432; done
        stop_pg() { for c in \$(pg_lsclusters -h | awk '{print \$1\"/\"\$2}'); do
            pg_ctlcluster --skip-systemctl-redirect \${c%/*} \${c#*/} stop -m fast 2>/dev/null || true; done; }
        trap stop_pg EXIT
        scripts/postgis.sh
        export QT_QPA_PLATFORM=offscreen
        qgis_version=\$(.venv/bin/python -c 'from qgis.core import Qgis; print(Qgis.QGIS_VERSION)' 2>/dev/null)
        echo \"QGIS \$qgis_version, \$(.venv/bin/python -V), \$(. /etc/os-release; echo \$PRETTY_NAME)\"
        # A crash leaves its core in the working directory (core_pattern "core"): one_version keeps it for gdb.
        rm -f core
        ulimit -c unlimited 2>/dev/null || true
        .venv/bin/python -m pytest -p no:cacheprovider $pytest_args
    "
}

one_version() {
    local name=$1 suite=$2 target=$3 root started=$SECONDS
    root=$(root_of "$name" "$suite" "$target")
    exec 9>"$CACHE/qgis-$name.lock"
    flock 9  # one run per chroot at a time
    build_root "$name" "$suite" "$target"
    log "$name: copying the clone in, make setup (venv, requirements, demo data)"
    prepare "$name" "$root" >"$CACHE/logs/$name-setup.log" 2>&1 || die "$name: setup failed, see $CACHE/logs/$name-setup.log"
    log "$name: running the tests ($(( SECONDS - started )) s so far)"
    local rc=0
    run_tests "$name" "$root" >"$CACHE/logs/$name.log" 2>&1 || rc=$?
    unmount_leftovers "$root"
    local summary
    # A crashed suite has no summary: without "|| true", pipefail and set -e ended this function here, silently.
    summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed)|^=+ .*(passed|failed|error).* in ' "$CACHE/logs/$name.log" | tail -n 1 || true)
    if [ -f "$root$SRC/core" ]; then  # the last core dumped there: copy it into the chroot (--shell NAME), gdb it
        mv "$root$SRC/core" "$CACHE/logs/$name.core"
        if [ -n "$summary" ]; then  # a test's child (test_fuzz_processes crashes one on purpose); its test says if it mattered
            log "$name: the suite ended normally; a child process's core is kept in $CACHE/logs/$name.core"
        else
            log "$name: the suite crashed; its core is kept in $CACHE/logs/$name.core"
        fi
    fi
    log "$name: $(grep -m 1 "^QGIS" "$CACHE/logs/$name.log" || true) | ${summary:-no summary} | exit $rc | $(( SECONDS - started )) s"
    [ "$rc" = 0 ] || report_failure "$CACHE/logs/$name.log" >&2
    return "$rc"
}

# All in one function, read whole before it runs: editing this file during a run does not disturb it.
main() {
    if [ "${1:-}" = --shell ]; then
        read -r name suite target <<<"$(version_line "${2:?which version}")"
        exec_root=$(root_of "$name" "$suite" "$target")
        in_chroot "$exec_root" "cd $SRC 2>/dev/null; exec bash -i"
        return
    fi

    names=("$@")
    [ ${#names[@]} -gt 0 ] || names=("${DEFAULT_VERSIONS[@]}")
    local started=$SECONDS name suite target exec_root pid
    started=$SECONDS
    pids=()
    failed=0
    for name in "${names[@]}"; do
        read -r name suite target <<<"$(version_line "$name")"
        one_version "$name" "$suite" "$target" &
        pids+=($!)
        if [ "${#pids[@]}" -ge "$JOBS" ]; then
            wait "${pids[0]}" || failed=1
            pids=("${pids[@]:1}")
        fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    log "all done in $(( SECONDS - started )) s; logs in $CACHE/logs"
    return "$failed"
}

main "$@"
exit $?
