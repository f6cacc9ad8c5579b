#!/bin/sh
# What Supabase Auth needs in its database before its first start (it runs its own migrations then):
# its login role, the roles its migrations grant to, and the `auth` schema it owns. Run once, by the
# PostgreSQL image, on an empty data directory.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -v auth_password="$AUTH_DB_PASSWORD" <<'EOSQL'
CREATE ROLE supabase_admin LOGIN CREATEROLE CREATEDB REPLICATION BYPASSRLS;
CREATE ROLE supabase_auth_admin NOINHERIT CREATEROLE LOGIN NOREPLICATION PASSWORD :'auth_password';
CREATE SCHEMA IF NOT EXISTS auth AUTHORIZATION supabase_auth_admin;
GRANT CREATE ON DATABASE postgres TO supabase_auth_admin;
ALTER ROLE supabase_auth_admin SET search_path = auth;
EOSQL
