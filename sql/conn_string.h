/* conn_string: attributes of an ODBC connection string ("key=value;…", values maybe {braced}). */
#ifndef SQLQ_CONN_STRING_H
#define SQLQ_CONN_STRING_H

/* Every non-empty value whose key (case-insensitive) is one of keys (NULL-terminated), in
 * order, unbraced ({a}}b} is "a}b"), blanks around unbraced values dropped; repeated keys give
 * repeated values (drivers differ on which one wins). A NULL-terminated list, NULL only when
 * out of memory; free it with sqlq_conn_string_list_free. */
char **sqlq_conn_string_values(const char *conn, const char *const *keys);
void sqlq_conn_string_list_free(char **list);

#endif
