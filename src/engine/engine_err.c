/* Errors across the public boundary: the internal qtts_err into the caller's
 * qtts_error, and the status names. */
#include "engine/engine_internal.h"

void engine_copy_err(const qtts_err *from, qtts_status fallback, qtts_error *to) {
    qtts_err_export(from, fallback, to);
}

const char *qtts_status_name(qtts_status s) {
    switch (s) {
    case QTTS_OK: return "ok";
    case QTTS_ERR_INVALID: return "invalid";
    case QTTS_ERR_BUSY: return "busy";
    case QTTS_ERR_NO_MEMORY: return "no_memory";
    case QTTS_ERR_MODEL: return "model";
    case QTTS_ERR_CANCELLED: return "cancelled";
    case QTTS_ERR_INTERNAL: return "internal";
    case QTTS_ERR_NOT_FOUND: return "not_found";
    case QTTS_ERR_EXISTS: return "exists";
    }
    return "internal";
}
