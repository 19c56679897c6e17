/* credential_doc: the Microsoft Entra ID section of the configuration reference. */
#ifndef SQLQ_CREDENTIAL_DOC_H
#define SQLQ_CREDENTIAL_DOC_H

#include <stdio.h>

/* Markdown: the identity-based connection settings, token sources and their behaviour. */
void sqlq_credential_print_markdown(FILE *f);

#endif
