/* console_assets: the console's page, script and style sheet, compiled in from
 * console/assets (embed_assets.cmake writes the table). */
#ifndef SQLQ_CONSOLE_ASSETS_H
#define SQLQ_CONSOLE_ASSETS_H

#include <stddef.h>

typedef struct sqlq_console_asset {
    const char *path; /* "/app.js"; NULL ends the table */
    const unsigned char *data;
    size_t len;
} sqlq_console_asset;

extern const sqlq_console_asset sqlq_console_assets[];

#endif
