-- Signing in must find a customer user before its tenant is known, but tenant users are under
-- RLS (spec §5.7 item 2). This SELECT-only policy opens exactly one row: the user whose email
-- the current transaction names in `app.login_email`. It grants nothing an attacker who does
-- not already know the email could use, and never UPDATE, DELETE or INSERT.
CREATE POLICY login_lookup ON users FOR SELECT
  USING (email = (SELECT NULLIF(current_setting('app.login_email', true), '')));
