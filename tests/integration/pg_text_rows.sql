-- The rows test_pg_text.c compares: ordinary values, each type's limits and non-finite values,
-- NULLs, large values, odd text. A writer's own session settings must not matter.
SET TIME ZONE 'Europe/Prague';
INSERT INTO t VALUES (1, true, -32768, 2147483647, 4611686018427387904, 1234.5,
  1234567890123456789012345678.1234567891, 2.5, 0.1, 1234.56,
  'žluťoučký kůň 🐴', 'abc', 'ab', 'x', 'nm',
  '\x00ff10', '2024-02-29', '13:14:15.25', '13:14:15+02', '2024-02-29 13:14:15.123456',
  '2024-02-29 15:14:15.5+02', '1 day 2 hours',
  'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"a": [1, 2.50, "x"]}', '{"a": [1, 2.50]}',
  '<a x="1">t &amp; u</a>',
  B'101', B'10', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
  'a fat cat', 'fat & rat', '(1.5,2.25)', '((1,2),(3,4))', '16/B374D848', 12345, '123', '456',
  '{1,2,NULL}', '{"2024-02-29 15:14:15.5+02",infinity}', '{"a b","c\"d",NULL}', '{1.5,NaN}',
  '{2024-02-29,infinity}', '{"\\x00ff"}', '{0.1,1e300,-0}',
  '[1,5)', '[2024-01-01 10:00+02,2024-02-01)', '[2024-01-01,2024-02-01)', '{[1,3),[5,7)}',
  'ok', ROW(1, 'x y', '2024-02-29 15:14:15.5+02'), 'past',
  42, 7, 12.5, 'dtext', true, '\x00ff', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 0.1, 42,
  '2024-02-29 15:14:15.5+02', '2024-02-29 13:14:15.123456', '2024-02-29', '13:14:15.25',
  '13:14:15.25+02', '2024-02-29 15:14:15.5+02', 18,
  'a=>1, "b c"=>NULL', 'MiXed', lo_from_bytea(0, '\x68656c6c6f'), 'k');
-- The limits and the values outside the ordinary range.
INSERT INTO t (id, dt, ts, tstz, tm, tmtz, iv, n, n2, i8, i2, i4, d, r, by, b, u, j, jb, tx, m,
  o, xi, x8, ia, tza, da, tsr, dr, ir, mr, ch, c1, fa, di, df, dn)
VALUES (2, 'infinity', 'infinity', 'infinity', '24:00:00', '24:00:00-15:59', '178000000 years',
  'NaN', 'NaN', 9223372036854775807, 32767, -2147483648, 'Infinity', 'NaN', '\x', false,
  'ffffffff-ffff-ffff-ffff-ffffffffffff', '{"k": "\u00e9\u20ac"}', '[]',
  'a' || chr(1) || chr(31) || 'b', 92233720368547758.07, 4294967295, '4294967295',
  '18446744073709551615', '{}', '{-infinity}', '{}', '(,)', 'empty', 'empty', '{}', '', '',
  '{NaN,Infinity,-Infinity}', -2147483648, 'NaN', -9999999999.99);
INSERT INTO t (id, dt, ts, tstz, tm, tmtz, iv, n, n2, i8, d, r, m, tza, da, tsr)
VALUES (3, '-infinity', '-infinity', '-infinity', '00:00:00', '00:00:00+15:59', '-178000000 years',
  'Infinity', -0.0000000001, -9223372036854775808, 1.7976931348623157e308, 3.4028235e38,
  -92233720368547758.08, '{"4713-01-01 00:00:00+00 BC","294276-12-31 23:59:59.999999+00"}',
  '{"0044-03-15 BC",5874897-12-31}', '[4713-01-01 00:00:00+00 BC,infinity]');
INSERT INTO t (id, dt, ts, tstz, tm, tmtz, iv, n, i8, d, r)
VALUES (4, '4713-01-01 BC', '4713-01-01 00:00:00 BC', '4713-01-01 00:00:00+00 BC',
  '12:34:56.789012', '12:34:56.789012+05:30', '1 mon -1 day 00:00:00.000001', '-Infinity',
  9007199254740993, 5e-324, 1.4e-45);
INSERT INTO t (id, dt, ts, tstz, tm, tmtz, n, i8, d, r)
VALUES (5, '5874897-12-31', '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00',
  '23:59:59.999999', '23:59:59.999999-15:59', repeat('9', 1000)::numeric / 7,
  -9007199254740993, 0.30000000000000004, -0.0);
INSERT INTO t (id, dt, ts, tstz, tm, n, i8, d, r)
VALUES (6, '0044-03-15 BC', '2024-02-29 12:00:00.5', '2024-05-01 12:00:00.5+02',
  '00:00:00.000001', ('0.' || repeat('0', 500) || '1')::numeric, 9007199254740992, '-Infinity',
  '-Infinity');
-- A domain over a date/time type holding what psqlODBC cannot (its twins: the plain columns).
INSERT INTO t (id, tstz, dtstz, its, ts, dts, dt, ddate, tm, dtime, tmtz, dtimetz)
VALUES (7, 'infinity', 'infinity', 'infinity', '4713-01-01 00:00:00 BC', '4713-01-01 00:00:00 BC',
  '5874897-12-31', '5874897-12-31', '24:00:00', '24:00:00', '24:00:00-15:59', '24:00:00-15:59');
INSERT INTO t (id) VALUES (8);
-- Large values, and text as odd as text gets.
INSERT INTO t (id, tx, by, j, jb, ia, n, ta, x, tsv, hs)
VALUES (9, repeat('žluť', 300000), decode(repeat('00ff', 100000), 'hex'),
  (SELECT json_agg(g) FROM generate_series(1, 20000) g),
  (SELECT jsonb_object_agg(g::text, repeat('x', g % 50)) FROM generate_series(1, 5000) g),
  (SELECT array_agg(g) FROM generate_series(1, 10000) g), repeat('1', 5000)::numeric,
  (SELECT array_agg(repeat('é', g)) FROM generate_series(1, 300) g),
  CAST('<r>' || repeat('<i>x</i>', 10000) || '</r>' AS xml), CAST(repeat('word ', 1000) AS tsvector),
  CAST('a=>"' || repeat('b', 5000) || '"' AS hstore));
INSERT INTO t (id, tx, vc, ch, ta, j, jb, co, e, hs, x, tsv, nm, ct, tl, ti)
VALUES (10, E'quote " backslash \\ tab \t newline \n cr \r bell \007 del \177 é€😀 \u2028 \uFFFD',
  '', ' ', '{"",NULL,"NULL","\\\\"}', 'null', '"text"', ROW(NULL, '', NULL), 'happy', '', '',
  '', repeat('n', 63), '', 'future', -1);
INSERT INTO k VALUES ('infinity', 'NaN', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', E'é"\\', '\x00ff',
  'infinity', true, 1);
INSERT INTO k VALUES ('2024-02-29 15:14:15.5+02', 1e-20, 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '', '\x', '0044-03-15 BC', false, 2);
INSERT INTO k VALUES ('4713-01-01 00:00:00+00 BC', -0.0, '00000000-0000-0000-0000-000000000000',
  repeat('k', 1000), decode(repeat('ab', 500), 'hex'), '5874897-12-31', false, 3);
