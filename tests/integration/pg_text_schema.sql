-- The table test_pg_text.c reads three ways (trigger source, libpq, pgoutput): a column of every
-- kind of type PostgreSQL has, user types and domains included.
CREATE EXTENSION hstore;
CREATE EXTENSION citext;
CREATE EXTENSION lo;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE comp AS (a int, b text, c timestamptz);
CREATE TYPE timeline AS ENUM ('past', 'future'); -- named like a time: selected as text
CREATE DOMAIN dint AS int;
CREATE DOMAIN dint2 AS dint;                       -- a domain over a domain
CREATE DOMAIN dnum AS numeric(12, 2);
CREATE DOMAIN dtext AS text;
CREATE DOMAIN dbool AS boolean;
CREATE DOMAIN dbytea AS bytea;
CREATE DOMAIN duuid AS uuid;
CREATE DOMAIN dfloat AS float8;
CREATE DOMAIN timeint AS int;                      -- named like a time: selected as text
CREATE DOMAIN dtstz AS timestamptz;
CREATE DOMAIN dts AS timestamp;
CREATE DOMAIN ddate AS date;
CREATE DOMAIN dtime AS time;
CREATE DOMAIN dtimetz AS timetz;
CREATE TABLE t (
  id int PRIMARY KEY,
  b boolean, i2 smallint, i4 integer, i8 bigint, n numeric, n2 numeric(38, 10), r real,
  d double precision, m money,
  tx text, vc varchar(20), ch char(5), c1 "char", nm name,
  by bytea, dt date, tm time, tmtz timetz, ts timestamp, tstz timestamptz, iv interval,
  u uuid, j json, jb jsonb, x xml,
  bi bit(3), vb varbit, ine inet, ci cidr, mac macaddr, mac8 macaddr8,
  tsv tsvector, tsq tsquery, pt point, bx box, lsn pg_lsn, o oid, xi xid, x8 xid8,
  ia int[], tza timestamptz[], ta text[], na numeric[], da date[], bya bytea[], fa float8[],
  ir int4range, tsr tstzrange, dr daterange, mr int4multirange,
  e mood, co comp, tl timeline,
  di dint, di2 dint2, dn dnum, dtx dtext, db dbool, dby dbytea, du duuid, df dfloat, ti timeint,
  dtstz dtstz, dts dts, ddate ddate, dtime dtime, dtimetz dtimetz,
  its information_schema.time_stamp, icn information_schema.cardinal_number,
  hs hstore, ct citext, l lo, rc regclass);
-- Key columns of the types whose text needs care: the message's key is built from them too.
CREATE TABLE k (kt timestamptz, kn numeric, ku uuid, kx text, kb bytea, kd date, kbo boolean,
  v int NOT NULL, PRIMARY KEY (kt, kn, ku, kx, kb, kd, kbo));
