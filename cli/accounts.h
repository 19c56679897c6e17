/* accounts: the named storage accounts of a settings file ("accounts": {"west": …}), each with
 * its own credential, for the queues of a shard set that live outside the default account. */
#ifndef SQLQ_ACCOUNTS_H
#define SQLQ_ACCOUNTS_H

#include "account.h"

#include <jansson.h>

typedef struct sqlq_cli_accounts {
    char **names;
    sqlq_account **accounts;
    size_t count;
} sqlq_cli_accounts;

/* Read the file's "accounts" object (file may be NULL: none). Each value is a connection
 * string as queue_connection takes it, or {"connection_file": PATH} (the file's text, a
 * trailing newline dropped) or {"connection_env": VAR} (that environment variable). The text
 * is registered as a log secret before it is parsed. Returns -1 when usable, else the exit
 * code after a message on stderr naming the account and what is wrong (never the secret). */
int sqlq_cli_accounts_load(const char *command, const json_t *file,
                           const sqlq_account_options *opts, sqlq_cli_accounts *out);
/* The account of that name, or NULL. */
const sqlq_account *sqlq_cli_accounts_find(const sqlq_cli_accounts *a, const char *name);
void sqlq_cli_accounts_free(sqlq_cli_accounts *a);

#endif
