#!/bin/sh
# Entrypoint of the test image localhost/svc-test/opensearch:2.19.4, the stand-in for
# wazuh/wazuh-indexer:4.9.2 (docs/test-images.md "opensearch"): runs OpenSearch in the foreground
# as PID 1 (the JVM gets the runtime's SIGTERM), with the JVM flags testcluster/opensearch/node.ts
# uses. As in the Wazuh indexer image, the home /usr/share/wazuh-indexer is also the
# configuration directory (OPENSEARCH_PATH_CONF) the tenant chart mounts opensearch.yml, certs/
# and opensearch-security/*.yml into; the node writes its keystore there. Where that directory
# is not writable (a read-only root), its configuration files are copied to /tmp first.
# The image also holds a home without the security plugin: OPENSEARCH_SECURITY_PLUGIN=true|false
# picks one; unset, the plugin is loaded exactly when opensearch.yml has plugins.security
# settings. INDEXER_PASSWORD (the chart sets it) is ignored, as the upstream entrypoint ignores it
# without bin/opensearch-users, which the indexer does not ship.
set -eu

indexer=/usr/share/wazuh-indexer
conf="${OPENSEARCH_PATH_CONF:-$indexer}"
if [ ! -f "$conf/opensearch.yml" ]; then
  echo "error: no opensearch.yml in $conf (mount the configuration there)" >&2
  exit 1
fi

case "${OPENSEARCH_SECURITY_PLUGIN:-}" in
  true) home="$indexer" ;;
  false) home=/usr/share/opensearch/home ;;
  "")
    if grep -q '^[[:space:]]*plugins\.security\.' "$conf/opensearch.yml"; then
      home="$indexer"
    else
      home=/usr/share/opensearch/home
    fi
    ;;
  *)
    echo "error: OPENSEARCH_SECURITY_PLUGIN must be true or false" >&2
    exit 1
    ;;
esac

if ! touch "$conf/.writable" 2>/dev/null; then
  mkdir -p /tmp/opensearch-config
  for entry in "$conf"/* "$conf"/.[!.]*; do
    [ -e "$entry" ] || continue
    # The installation's own directories stay where they are.
    case "${entry##*/}" in bin | lib | modules | plugins | jdk | .writable) continue ;; esac
    cp -R "$entry" /tmp/opensearch-config/
  done
  conf=/tmp/opensearch-config
fi
rm -f "$conf/.writable"
# The security plugin's defaults where a mounted configuration brings none of its own.
if [ "$home" = "$indexer" ]; then
  mkdir -p "$conf/opensearch-security"
  for file in "$indexer"/plugins/opensearch-security/config/*.yml; do
    [ -e "$conf/opensearch-security/${file##*/}" ] || cp "$file" "$conf/opensearch-security/"
  done
fi
[ -f "$conf/log4j2.properties" ] || cp "$indexer/log4j2.properties" "$conf/log4j2.properties"

# Settings given as environment variables with a dot in the name (discovery.type=single-node,
# as the Wazuh image and the chart do) become -E options. dash drops such names from its own
# environment, so they are read from the one the process started with.
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
exec "${JAVA_HOME:-$indexer/jdk}/bin/java" \
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
