-- Replica table for docker/compose.mariadb.yaml (run once by the mariadb image on a fresh
-- volume): `sqlq consume --sql` upserts the PostgreSQL demo table's changes into it.
CREATE TABLE IF NOT EXISTS orders (
    id bigint NOT NULL PRIMARY KEY,
    customer varchar(200) NOT NULL,
    total decimal(12, 2) NOT NULL,
    created_at datetime(6) NOT NULL
) DEFAULT CHARSET=utf8mb4;
