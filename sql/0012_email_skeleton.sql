-- Look-alike addresses (docs/auth.md "Email addresses"). New addresses are ASCII only
-- (contracts/email.ts), so a mixed-script look-alike cannot be created; what remains are the
-- ASCII-to-ASCII confusables of Unicode UTS #39 (confusables.txt): 0 → O, 1 → l, I → l,
-- | → l, ` → ', m → rn. Two addresses with the same skeleton cannot both be users, across
-- all tenants alike: `bob@example.com` blocks `b0b@example.com`, `tom@x.io` blocks
-- `torn@x.io`. Addresses are stored lower-case, so O and I are folded first.
CREATE FUNCTION email_skeleton(email text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN replace(translate(lower(email), '01|`', 'oll'''), 'm', 'rn');

ALTER TABLE users ADD COLUMN email_skeleton text;

-- Maintained by the trigger, never by hand.
CREATE FUNCTION users_email_skeleton() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.email_skeleton := email_skeleton(NEW.email);
  RETURN NEW;
END
$$;
CREATE TRIGGER users_email_skeleton BEFORE INSERT OR UPDATE OF email, email_skeleton ON users
  FOR EACH ROW EXECUTE FUNCTION users_email_skeleton();

-- Existing look-alikes stay usable: the oldest of each group keeps the skeleton, the others
-- keep NULL (which the unique index ignores) instead of failing the upgrade. The backfill
-- must see every tenant's rows, so the owner's forced RLS is lifted inside this transaction.
ALTER TABLE users NO FORCE ROW LEVEL SECURITY;
UPDATE users SET email = email
 WHERE id IN (SELECT DISTINCT ON (email_skeleton(email)) id
                FROM users ORDER BY email_skeleton(email), created_at, id);
ALTER TABLE users FORCE ROW LEVEL SECURITY;

CREATE UNIQUE INDEX users_email_skeleton_key ON users (email_skeleton);
