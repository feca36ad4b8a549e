# shellcheck shell=bash
# Shared by scripts/run and scripts/test: install what is missing, build, install, prepare the runtime
# trees. Sourced, not run. Every step prints one line saying what it does.

DIFYSANDBOX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$DIFYSANDBOX_TOP/build}
PREFIX=${PREFIX:-/usr/local}

# Debian packages: build, run (the interpreters and the Python packages runs may import), test.
BUILD_PACKAGES=(gcc meson ninja-build pkg-config libseccomp-dev libcap-dev libjson-c-dev libsystemd-dev
                libyaml-dev libmicrohttpd-dev libcmocka-dev scdoc)
RUNTIME_PACKAGES=(python3 python3-requests python3-httpx python3-jinja2 python3-socks python3-numpy
                  python3-pandas nodejs python3-pip npm)
# python3-simplejson: requests imports it when it is installed, so the runtime tree tests meet a host where
# a library's optional import is present (issue 38). python3-pil, python3-cryptography, python3-jwt and
# fonts-dejavu-core (through python3-matplotlib): the run-time data tests (test_runtime_data.py).
# prometheus (its promtool too) and tmux: the metrics and `difysandboxctl top` system tests.
TEST_PACKAGES=(clang python3-pytest procps util-linux iproute2 systemd-container dbus python3-matplotlib nginx man-db
               python3-dbus python3-gi debhelper dpkg-dev fakeroot lintian rpm rpmlint debootstrap
               python3-simplejson python3-pil python3-cryptography python3-jwt prometheus tmux)
# The library corpus (tests/corpus, tests/integration/test_corpus.py): Debian's packages of the Python libraries
# Dify users' code imports, packaged by Debian 12 and 13 alike; the corpus builds its own runtime tree of them
# (tests/corpus/python3-packages.txt). python3-orjson is Debian 13's only: the trixie tree adds it.
CORPUS_PACKAGES=(python3-matplotlib python3-seaborn python3-pil python3-qrcode python3-scipy python3-sklearn
                 python3-statsmodels python3-patsy python3-sympy python3-mpmath python3-networkx python3-numexpr
                 python3-shapely python3-nltk python3-openpyxl python3-xlsxwriter python3-docx python3-odf
                 python3-pypdf python3-reportlab python3-cryptography python3-jwt python3-nacl python3-bcrypt
                 python3-passlib python3-ecdsa python3-rsa python3-pycryptodome python3-lxml python3-bs4
                 python3-html5lib python3-bleach python3-xmltodict python3-defusedxml python3-markdown
                 python3-mistune python3-markdown-it python3-pygments python3-dateutil python3-tz python3-babel
                 python3-arrow python3-humanize python3-croniter python3-iso8601 python3-holidays python3-inflect
                 python3-phonenumbers python3-pycountry python3-pydantic python3-yaml python3-simplejson
                 python3-ujson python3-msgpack python3-tomlkit python3-jsonschema python3-marshmallow
                 python3-jmespath python3-sqlalchemy python3-sqlparse python3-tabulate python3-prettytable
                 python3-regex python3-unidecode python3-slugify python3-emoji python3-thefuzz python3-levenshtein
                 python3-textdistance python3-lz4 python3-zstandard python3-brotli python3-cachetools python3-toolz
                 python3-joblib)
# The real-kernel tiers (tests/rig/vm): QEMU and what builds its cached Debian images; for the arm64 one,
# qemu-system-aarch64, and qemu-user-static with binfmt-support for the image's second debootstrap stage.
VM_PACKAGES=(qemu-system-x86 qemu-utils openssh-client e2fsprogs debootstrap
             qemu-system-arm qemu-user-static binfmt-support)
# The other release's tier (tests/release/run): a tree of it (tests/rig/chroot; trixie on this Debian 12
# host) that builds, unit-tests and packages the checkout, and runs integration tests with its interpreters.
RELEASE_TREE_PACKAGES=(gcc meson ninja-build pkgconf libseccomp-dev libcap-dev libjson-c-dev libsystemd-dev
                      libyaml-dev libmicrohttpd-dev libcmocka-dev scdoc systemd systemd-dev build-essential
                      debhelper dpkg-dev fakeroot lintian git python3 python3-requests python3-httpx
                      python3-jinja2 python3-socks python3-anyio python3-numpy python3-pandas nodejs
                      python3-pytest procps util-linux iproute2 ca-certificates netbase strace python3-pip
                      npm nginx man-db dbus python3-dbus python3-gi python3-matplotlib
                      "${CORPUS_PACKAGES[@]}" python3-orjson)
# arm64: a cross-build with Debian's cross compiler and the :arm64 development packages (multiarch).
# pkgconf:arm64 too: the arm64 .deb's Build-Depends resolve to it (dpkg-buildpackage -a arm64).
CROSS_ARM64_PACKAGES=(crossbuild-essential-arm64 libseccomp-dev:arm64 libcap-dev:arm64 libjson-c-dev:arm64
                      libsystemd-dev:arm64 libyaml-dev:arm64 libmicrohttpd-dev:arm64 libcmocka-dev:arm64
                      pkgconf:arm64)

step() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

require_root() {
        [ "$(id -u)" -eq 0 ] || die "run this as root: it installs packages, creates cgroups and namespaces"
}

ensure_packages() {
        local missing=() p
        for p in "$@"; do
                # nodejs may come from another repository (nodesource) with /usr/bin/node already there.
                if [ "$p" = nodejs ] && command -v node >/dev/null; then
                        continue
                fi
                # NodeSource's nodejs package carries npm itself (and conflicts with Debian's npm).
                if [ "$p" = npm ] && command -v npm >/dev/null; then
                        continue
                fi
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        step "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" ||
                { apt-get -o DPkg::Lock::Timeout=600 update -q &&
                  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"; } ||
                die "apt-get install ${missing[*]} failed"
}

build_and_install() {
        local werror=false
        [ "${CI:-}" = true ] && werror=true
        step "building in $BUILD_DIR (werror=$werror)"
        if [ -f "$BUILD_DIR/build.ninja" ]; then
                meson configure "$BUILD_DIR" -Dwerror=$werror -Dprefix="$PREFIX" >/dev/null
        else
                meson setup "$BUILD_DIR" "$DIFYSANDBOX_TOP" -Dwerror=$werror -Dprefix="$PREFIX" >/dev/null
        fi || die "meson setup failed"
        ninja -C "$BUILD_DIR" >/dev/null || { ninja -C "$BUILD_DIR"; die "build failed"; }
        step "installing into $PREFIX"
        meson install -C "$BUILD_DIR" --quiet >/dev/null || die "meson install failed"
        # The users: difysandbox-worker (HTTP workers, `difysandbox serve` included) and difysandbox-deps.
        step "creating the system users of sysusers.d/difysandbox.conf"
        systemd-sysusers "$PREFIX/lib/sysusers.d/difysandbox.conf" || die "systemd-sysusers failed"
}

prepare_runtimes() {
        local language
        for language in python3 nodejs; do
                step "preparing the $language runtime tree"
                "$PREFIX/libexec/difysandbox/difysandbox-prepare-runtime" "$language" ||
                        die "preparing the $language runtime tree failed"
        done
}

# No key is in force until one is configured (issue 14): as the packages do, write a random one to a
# root-only drop-in unless the configuration already has one, and say how to read it.
ensure_api_key() {
        local dropin=/etc/difysandbox/config.d/10-key.yaml out key
        out=$(env -u API_KEY "$PREFIX/bin/difysandbox" check-config --show-secrets 2>/dev/null) ||
                die "the configuration is refused: $PREFIX/bin/difysandbox check-config says why"
        if grep -q '^app\.key: ' <<<"$out"; then
                return 0
        fi
        key=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
        install -d -m 0755 /etc/difysandbox/config.d
        (umask 077 && printf 'app:\n  key: "%s"\n' "$key" >"$dropin")
        step "generated a random API key in $dropin; read it with: difysandbox check-config --show-secrets"
}

# Build for arm64 in $1 with tests/rig/cross-arm64.ini (-Dwerror=true) and check that what came out is
# aarch64 code. Returns non-zero, having said why, instead of dying: it is one check of ./scripts/test.
cross_build_arm64() {
        local dir=$1 elf
        if ! dpkg --print-foreign-architectures | grep -qx arm64; then
                step "adding arm64 to dpkg's architectures (for the :arm64 development packages)"
                dpkg --add-architecture arm64 && apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null ||
                        { echo "cannot add the arm64 architecture" >&2; return 1; }
        fi
        (ensure_packages "${CROSS_ARM64_PACKAGES[@]}") || return 1
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" "$DIFYSANDBOX_TOP" --cross-file "$DIFYSANDBOX_TOP/tests/rig/cross-arm64.ini" \
                        -Dwerror=true >/dev/null || { echo "meson setup for arm64 failed" >&2; return 1; }
        fi
        ninja -C "$dir" >/dev/null || { ninja -C "$dir"; return 1; }
        for elf in difysandbox libdifysandbox-enter.so src/worker/difysandbox-worker src/ctl/difysandboxctl \
                   src/manager/difysandbox-manager tests/unit/test-seccomp-policy; do
                LC_ALL=C readelf -h "$dir/$elf" 2>/dev/null | grep -q 'Machine:[[:space:]]*AArch64' ||
                        { echo "$dir/$elf is not an arm64 ELF file" >&2; return 1; }
        done
}

# Cross-build the arm64 .deb into $1 as Debian cross-builds a package: `packaging/build-deb -a arm64`
# (dpkg-buildpackage -a arm64, the Build-Depends as :arm64; the tests that cannot run on this amd64 host
# skip with their reason, tests/unit/meson.build), then lintian on it. The VM tier of arm64 installs it.
# Needs cross_build_arm64's packages (it adds the arm64 architecture). Prints the .deb's path on stdout
# (everything else goes to stderr); returns non-zero, having said why.
cross_deb_arm64() {
        local out=$1 deb
        mkdir -p "$out" || return 1
        rm -f "$out"/difysandbox_*_arm64.deb "$out"/difysandbox-dbgsym_*_arm64.deb
        DEB_BUILD_OPTIONS="parallel=$(nproc)" "$DIFYSANDBOX_TOP/packaging/build-deb" -a arm64 "$out" \
                >"$out/build-deb.log" 2>&1 ||
                { tail -40 "$out/build-deb.log" >&2; echo "the arm64 .deb did not build (log: $out/build-deb.log)" >&2
                  return 1; }
        deb=$(ls "$out"/difysandbox_*_arm64.deb) || return 1
        lintian --fail-on error,warning "$deb" >&2 || { echo "lintian refuses $deb" >&2; return 1; }
        echo "$deb"
}
