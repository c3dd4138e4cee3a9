-- The edge proxy (issue 15, spec §2.9 monitorIngress.mode=edge-proxy): the orchestrator renders
-- its HAProxy configuration from the tenants holding a port pair (src/orchestrator/edge-proxy.ts),
-- so the pair column is now what the proxy listens on. Recorded where schema readers look.
COMMENT ON COLUMN tenants.edge_port_pair IS
  'Edge-proxy port pair k (ports SVC_EDGE_PORT_BASE+2k events, +2k+1 enrollment); the edge proxy fronts every non-null pair; released (NULL) at soft delete';
