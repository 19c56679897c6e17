/* logical_ops: the logical source (logical_source.h) as a change source (change_source.h): a
 * source with its own leases, fed by a stream, whose signal is its ready ring. */
#ifndef SQLQ_LOGICAL_OPS_H
#define SQLQ_LOGICAL_OPS_H

#include "change_source.h"

extern const sqlq_change_source_ops sqlq_change_source_logical;

#endif
