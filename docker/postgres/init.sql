-- Demo table for docker/compose.yaml (run once by the postgres image on a fresh volume).
-- `sqlq setup --table public.orders` then adds the change log and its triggers.
CREATE TABLE IF NOT EXISTS orders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer text NOT NULL,
    total numeric(12, 2) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
