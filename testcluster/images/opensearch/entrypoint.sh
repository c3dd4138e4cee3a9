#!/bin/sh
# Entrypoint of the test image localhost/svc-test/opensearch:2.19.4 (docs/test-images.md): runs
# OpenSearch in the foreground as PID 1 (the JVM gets the runtime's SIGTERM), with the JVM flags
# testcluster/opensearch/node.ts uses. The configuration comes from a mounted directory
# (OPENSEARCH_PATH_CONF, default /usr/share/opensearch/config); the node writes its keystore
# there, so a read-only mount is copied to /tmp first. The image holds two homes (plain, and
# with the security plugin): OPENSEARCH_SECURITY_PLUGIN=true|false picks one; unset, the plugin
# is loaded exactly when opensearch.yml has plugins.security settings.
set -eu

base=/usr/share/opensearch
conf="${OPENSEARCH_PATH_CONF:-$base/config}"
if [ ! -f "$conf/opensearch.yml" ]; then
  echo "error: no opensearch.yml in $conf (mount the configuration there)" >&2
  exit 1
fi

case "${OPENSEARCH_SECURITY_PLUGIN:-}" in
  true) home="$base/home-security" ;;
  false) home="$base/home" ;;
  "")
    if grep -q '^[[:space:]]*plugins\.security\.' "$conf/opensearch.yml"; then
      home="$base/home-security"
    else
      home="$base/home"
    fi
    ;;
  *)
    echo "error: OPENSEARCH_SECURITY_PLUGIN must be true or false" >&2
    exit 1
    ;;
esac

if ! touch "$conf/.writable" 2>/dev/null; then
  mkdir -p /tmp/opensearch-config
  cp -R "$conf/." /tmp/opensearch-config/
  conf=/tmp/opensearch-config
fi
rm -f "$conf/.writable"
# The security plugin's own defaults (config.yml, action groups, ...) under any files the
# configuration brings, as the chart mounts its three files over the image's copy.
if [ "$home" = "$base/home-security" ]; then
  defaults="$home/plugins/opensearch-security/config"
  mkdir -p "$conf/opensearch-security"
  for file in "$defaults"/*; do
    [ -e "$conf/opensearch-security/${file##*/}" ] || cp -R "$file" "$conf/opensearch-security/"
  done
fi
if [ ! -f "$conf/log4j2.properties" ]; then
  cat >"$conf/log4j2.properties" <<'LOG4J2'
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
LOG4J2
fi

# Settings given as environment variables with a dot in the name (discovery.type=single-node,
# as the official image and the chart do) become -E options. dash drops such names from its
# own environment, so they are read from the one the process started with.
set --
while IFS= read -r line; do
  key="${line%%=*}"
  case "$key" in
    *[!a-z0-9_.]* | .* | *.) ;;
    *.*) set -- "$@" "-E$line" ;;
  esac
done <<ENV
$(tr '\0' '\n' </proc/$$/environ)
ENV

# OPENSEARCH_JAVA_OPTS comes last, so its -Xms/-Xmx win; its words split on purpose.
# shellcheck disable=SC2086
exec "${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java" \
  -Xms512m -Xmx512m -XX:+UseG1GC \
  -Djna.nosys=true -Djna.nounpack=true \
  -Djava.security.manager=allow -Djava.locale.providers=SPI,COMPAT -Dfile.encoding=UTF-8 \
  -Djava.awt.headless=true -Dlog4j2.formatMsgNoLookups=true \
  -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
  -Dio.netty.allocator.numDirectArenas=0 -Dio.netty.noUnsafe=true \
  -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0 \
  -XX:-OmitStackTraceInFastThrow -Djava.io.tmpdir=/tmp \
  ${OPENSEARCH_JAVA_OPTS:-} \
  -cp "$home/lib/*" -Dopensearch.path.home="$home" -Dopensearch.path.conf="$conf" \
  -Dopensearch.distribution.type=tar \
  org.opensearch.bootstrap.OpenSearch "$@"
