#!/usr/bin/env bash
# The indexer pod's security-config sidecar (docs/charts-tenant.md "Indexer TLS and users").
#
# The security plugin reads opensearch-security/*.yml only to create a missing security index
# (allow_default_init_securityindex); an index that already exists (a tenant upgraded from
# monitor -svc-v1, or svc-indexer-security rewritten later) keeps its old users until
# securityadmin uploads the files. This loop does that upload with svc's admin certificate:
# once per pod start, then whenever the mounted files change. The Secret is mounted as a
# directory (no subPath), so the kubelet swaps the files in place when svc rewrites it.
#
# Only the three types svc writes are uploaded (-f/-t per file); config.yml, action_groups.yml
# and the rest stay what the security index holds. Each upload replaces its whole type, so users
# or mappings added by hand through the REST API or the dashboard are removed: svc's files are
# the source of truth for these three.
#
# Then, with the same certificate over HTTPS, the alert index setup the adapter reads by
# (docs/adapter.md): the ingest pipeline, the legacy index template naming it (order matters),
# and both on alert indices that already exist (404: none yet).
set -uo pipefail

: "${INDEXER_HOME:=/usr/share/wazuh-indexer}"
: "${SECURITY_DIR:=/run/svc/indexer-security}"
: "${CERTS_DIR:=${INDEXER_HOME}/certs}"
: "${STATE_DIR:=/run/svc/security-state}"
: "${INDEXER_HOST:=127.0.0.1}"
: "${INDEXER_PORT:=9200}"
: "${SETUP_DIR:=/opt/svc/indexer-setup}"
# The node certificate names the Service, not 127.0.0.1: curl verifies it under this name.
: "${INDEXER_TLS_NAME:=monitor-indexer}"
: "${SECURITYADMIN:=${INDEXER_HOME}/plugins/opensearch-security/tools/securityadmin.sh}"
: "${OPENSEARCH_JAVA_HOME:=${INDEXER_HOME}/jdk}"
: "${POLL_SECONDS:=30}"
: "${RETRY_SECONDS:=10}"
# "1": exit 0 as soon as the files are applied (retrying until then) instead of watching on.
: "${APPLY_ONCE:=}"
export OPENSEARCH_JAVA_HOME

FILES=(internal_users.yml:internalusers roles.yml:roles roles_mapping.yml:rolesmapping)
PIPELINE=svc-ingest-time
TEMPLATE=svc-alerts

log() { printf '%s security-config: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }

# One digest over every input; fails when one cannot be read (mid-swap, not mounted yet).
files_digest() {
  local entry
  for entry in "${FILES[@]}"; do
    cat "${SECURITY_DIR}/${entry%%:*}" 2>/dev/null || return 1
    printf '\0'
  done
  cat "${SETUP_DIR}/${PIPELINE}-pipeline.json" "${SETUP_DIR}/${TEMPLATE}-template.json" 2>/dev/null
}

inputs_digest() {
  files_digest | sha256sum | cut -d' ' -f1
}

# The node's HTTPS port accepts connections (bash's /dev/tcp: no client tool needed).
node_listening() {
  (exec 3<>"/dev/tcp/${INDEXER_HOST}/${INDEXER_PORT}") 2>/dev/null
}

# PUT <path> with a body (a file, or literal JSON after "-d"); prints the HTTP status.
put() {
  local path="$1" data
  if [ "$2" = "-d" ]; then data="$3"; else data="@$2"; fi
  curl -sS -o /dev/null -w '%{http_code}' -X PUT \
    --resolve "${INDEXER_TLS_NAME}:${INDEXER_PORT}:${INDEXER_HOST}" \
    --cacert "${CERTS_DIR}/root-ca.pem" \
    --cert "${CERTS_DIR}/admin.pem" --key "${CERTS_DIR}/admin-key.pem" \
    -H 'content-type: application/json' --data-binary "${data}" \
    "https://${INDEXER_TLS_NAME}:${INDEXER_PORT}${path}"
}

apply() {
  local entry status
  for entry in "${FILES[@]}"; do
    bash "${SECURITYADMIN}" \
      -f "${SECURITY_DIR}/${entry%%:*}" -t "${entry##*:}" \
      -h "${INDEXER_HOST}" -p "${INDEXER_PORT}" -icl -nhnv \
      -cacert "${CERTS_DIR}/root-ca.pem" \
      -cert "${CERTS_DIR}/admin.pem" -key "${CERTS_DIR}/admin-key.pem" || return 1
  done
  status="$(put "/_ingest/pipeline/${PIPELINE}" "${SETUP_DIR}/${PIPELINE}-pipeline.json")"
  [ "${status}" = 200 ] || { log "ingest pipeline: HTTP ${status}"; return 1; }
  status="$(put "/_template/${TEMPLATE}" "${SETUP_DIR}/${TEMPLATE}-template.json")"
  [ "${status}" = 200 ] || { log "index template: HTTP ${status}"; return 1; }
  status="$(put '/wazuh-alerts-*/_mapping' -d \
    '{"properties":{"svc_ingested_at":{"type":"date","format":"strict_date_optional_time||epoch_millis"}}}')"
  case "${status}" in 200 | 404) ;; *) log "alert index mapping: HTTP ${status}"; return 1 ;; esac
  status="$(put '/wazuh-alerts-*/_settings' -d "{\"index.final_pipeline\":\"${PIPELINE}\"}")"
  case "${status}" in 200 | 404) ;; *) log "alert index settings: HTTP ${status}"; return 1 ;; esac
}

mkdir -p "${STATE_DIR}"
applied_file="${STATE_DIR}/applied.sha256"

while :; do
  digest="$(inputs_digest)" || digest=""
  if [ -n "${digest}" ] && [ "${digest}" != "$(cat "${applied_file}" 2>/dev/null)" ]; then
    if ! node_listening; then
      log "waiting for the node on ${INDEXER_HOST}:${INDEXER_PORT}"
    elif apply; then
      # The digest read before the upload: a change during it differs and is applied next.
      printf '%s' "${digest}" >"${applied_file}"
      log "applied the security configuration ${digest}"
    else
      log "applying failed; retrying in ${RETRY_SECONDS}s"
    fi
  fi
  if [ -n "${digest}" ] && [ "${digest}" = "$(cat "${applied_file}" 2>/dev/null)" ]; then
    [ -n "${APPLY_ONCE}" ] && exit 0
    sleep "${POLL_SECONDS}"
  else
    sleep "${RETRY_SECONDS}"
  fi
done
