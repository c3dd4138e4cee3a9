-- Sessions are found by a hash of the cookie, never by the cookie itself (issue 10 item 7).
-- Until now the cookie carried sessions.id, so anyone who could read this table (svc_mssp, a
-- backup, a replica, a leaked query result) could replay every live session. From here on the
-- cookie carries 16 random bytes that are stored nowhere; the row keeps only their SHA-256 in
-- secret_hash (hex, like adapter_credentials.credential_hash in 0009: 128 random bits make a
-- slow password hash pointless). `id` stays the row's key and becomes an internal id that audit
-- rows and revocation may name without handing out a credential.
ALTER TABLE sessions ADD COLUMN secret_hash text;

-- Existing sessions cannot be converted: their cookie value is their id, which every reader of
-- the table has seen. Each gets the hash of random bytes nobody holds (so the column can be
-- NOT NULL and UNIQUE and no cookie finds it), and the live ones are also marked revoked, so
-- the record says what happened; rows are kept for audit (spec §3.2). Everyone signed in signs
-- in once more after this migration.
UPDATE sessions
   SET revoked_at = CASE
         WHEN revoked_at IS NULL AND absolute_expiry > now() AND idle_expiry > now() THEN now()
         ELSE revoked_at
       END,
       secret_hash = encode(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())), 'hex');

ALTER TABLE sessions
  ALTER COLUMN secret_hash SET NOT NULL,
  ADD CONSTRAINT sessions_secret_hash_format CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  ADD CONSTRAINT sessions_secret_hash_key UNIQUE (secret_hash);
