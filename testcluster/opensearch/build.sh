#!/usr/bin/env bash
# Assembles a real OpenSearch (the engine the Wazuh indexer 4.x is built on) from Maven artifacts
# into a cache outside the repository, keyed by the pinned versions, and prints
# OPENSEARCH_DIR=<dir> as its last line (docs/testing.md "The real indexer"). The directory holds
# two distribution-shaped homes sharing the same jars (hard links):
#   home/           core + the transport-netty4, ingest-common and lang-mustache modules (as in
#                   the Wazuh indexer: pipelines with {{…}} templates); no plugin
#   home-security/  the same, plus plugins/opensearch-security (the tenant indexer's plugin)
# A plain node must not load the security plugin, and OpenSearch reads plugins only from
# <home>/plugins, hence two homes rather than a switch. A warm cache needs neither Maven nor Java;
# progress goes to stderr so callers can parse stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.env
source "$here/versions.env"

# Bump when the assembly recipe below changes in a way that changes the homes (a new module, a
# new descriptor or policy line): the cache key holds it and the versions.
recipe=2
key="$OPENSEARCH_VERSION-$(
  { echo "recipe=$recipe"; cat "$here/versions.env"; } | sha256sum | cut -c1-12
)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/svc/opensearch"
out="$cache_root/$key"
stamp="$out/complete"

log() { echo "opensearch: $*" >&2; }

if [[ -f "$stamp" ]]; then
  echo "OPENSEARCH_DIR=$out"
  exit 0
fi

for tool in mvn java unzip; do
  if ! command -v "$tool" >/dev/null; then
    log "'$tool' is required to assemble the real indexer once per machine" \
      "(Debian: apt-get install maven openjdk-17-jre-headless unzip)"
    exit 127
  fi
done

mkdir -p "$cache_root"
# Two callers (global setup and `npm run indexer:build`) may race on a cold cache; one waits.
exec 9>"$cache_root/build.lock"
flock 9
if [[ -f "$stamp" ]]; then
  echo "OPENSEARCH_DIR=$out"
  exit 0
fi

total=$SECONDS
rm -rf "$out"
work="$out/work"
mkdir -p "$work"

# One throw-away pom per set of jars: Maven resolves the transitive dependencies and copies them
# under their repository file names (the security manager matches policy grants by them).
fetch() {
  local name="$1" deps="$2"
  mkdir -p "$work/$name"
  cat >"$work/$name/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>svc.testcluster</groupId><artifactId>opensearch-$name</artifactId><version>1</version>
  <dependencies>$deps
  </dependencies>
</project>
POM
  log "resolving $name ..."
  (cd "$work/$name" && mvn -B -q -Dstyle.color=never -f pom.xml \
    org.apache.maven.plugins:maven-dependency-plugin:2.8:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$work/$name/jars" 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g' | { grep -v '^$' || true; } >&2)
}
dep() {
  printf '\n    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>%s</dependency>' \
    "$1" "$2" "$3" "${4:+<type>$4</type>}"
}

fetch core "$(dep org.opensearch opensearch "$OPENSEARCH_VERSION")$(
  dep org.apache.logging.log4j log4j-core "$LOG4J_VERSION")$(
  dep org.opensearch opensearch-plugin-classloader "$CLASSLOADER_VERSION")"
fetch netty "$(dep org.opensearch.plugin transport-netty4-client "$OPENSEARCH_VERSION")"
fetch ingest "$(dep org.opensearch.plugin ingest-common "$OPENSEARCH_VERSION")"
fetch mustache "$(dep org.opensearch.plugin lang-mustache-client "$OPENSEARCH_VERSION")"
fetch security "$(dep org.opensearch.plugin opensearch-security "$SECURITY_VERSION" zip)"

home="$out/home"
mkdir -p "$home/lib" "$home/plugins"
for module in transport-netty4 ingest-common lang-mustache; do mkdir -p "$home/modules/$module"; done
cp "$work/core/jars/"*.jar "$home/lib/"
# A module gets only the jars the core does not already have: the same class twice on the
# plugin's class path fails the node's jar-hell check.
module_jars() {
  local from="$1" to="$2" jar
  for jar in "$from"/*.jar; do
    [[ -e "$home/lib/$(basename "$jar")" ]] || cp "$jar" "$to/"
  done
}
module_jars "$work/netty/jars" "$home/modules/transport-netty4"
module_jars "$work/ingest/jars" "$home/modules/ingest-common"
module_jars "$work/mustache/jars" "$home/modules/lang-mustache"

# The distribution builds these descriptors and the netty policy (its source's
# plugin-metadata); Maven serves only the jars.
descriptor() {
  cat <<PROPS
description=$1
version=$OPENSEARCH_VERSION
name=$2
classname=$3
java.version=17
opensearch.version=$OPENSEARCH_VERSION
extended.plugins=$4
has.native.controller=false
PROPS
}
descriptor 'Netty 4 based transport implementation' transport-netty4 \
  org.opensearch.transport.Netty4Plugin '' >"$home/modules/transport-netty4/plugin-descriptor.properties"
descriptor 'Module for ingest processors that do not require additional security permissions' \
  ingest-common org.opensearch.ingest.common.IngestCommonPlugin '' \
  >"$home/modules/ingest-common/plugin-descriptor.properties"
descriptor 'Mustache scripting integration for OpenSearch' lang-mustache \
  org.opensearch.script.mustache.MustachePlugin '' \
  >"$home/modules/lang-mustache/plugin-descriptor.properties"
cat >"$home/modules/lang-mustache/plugin-security.policy" <<'POLICY'
grant {
  // needed to do crazy reflection
  permission java.lang.RuntimePermission "accessDeclaredMembers";
};
POLICY
cat >"$home/modules/transport-netty4/plugin-security.policy" <<'POLICY'
grant codeBase "${codebase.netty-common}" {
   // for reading the system-wide configuration for the backlog of established sockets
   permission java.io.FilePermission "/proc/sys/net/core/somaxconn", "read";
   // netty makes and accepts socket connections
   permission java.net.SocketPermission "*", "accept,connect";
   // Netty sets custom classloader for some of its internal threads
   permission java.lang.RuntimePermission "*", "setContextClassLoader";
};

grant codeBase "${codebase.netty-transport}" {
   // Netty NioEventLoop wants to change this, because of JDK-6427854
   permission java.util.PropertyPermission "sun.nio.ch.bugLevel", "write";
};
POLICY

secure="$out/home-security"
mkdir -p "$secure/plugins/opensearch-security"
cp -al "$home/lib" "$home/modules" "$secure/"
unzip -q "$work/security/jars/opensearch-security-$SECURITY_VERSION.zip" \
  -d "$secure/plugins/opensearch-security"
chmod +x "$secure/plugins/opensearch-security/tools/"*.sh

rm -rf "$work"
touch "$stamp"
log "assembled in $((SECONDS - total))s ($(du -sh "$out" | cut -f1) on disk)"
echo "OPENSEARCH_DIR=$out"
