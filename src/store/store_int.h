/*
 * store_int: what the store's own files share and nobody else uses.
 */
#ifndef DROVER_STORE_INT_H
#define DROVER_STORE_INT_H

#include <libpq-fe.h>

#include "error.h"

/*
 * Check a result's status. Success (COMMAND_OK or TUPLES_OK): r goes to *res
 * (the caller PQclears it) or is freed when res is NULL, and 0 comes back.
 * Failure: r is freed, err gets the SQLSTATE (base-36 in lib_code) and the
 * message, and the code is DRV_EAGAIN when the connection broke, else DRV_EPG.
 */
int store__result(PGconn *conn, PGresult *r, PGresult **res, struct drv_err *err);

#endif
