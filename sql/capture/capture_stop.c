/* capture_stop: a capture's stop reasons (see the header). */
#include "capture_stop.h"

const char *sqlq_capture_stop_reason(const sqlq_error *err)
{
    return err && err->reason[0] ? err->reason : SQLQ_STOP_OTHER;
}
