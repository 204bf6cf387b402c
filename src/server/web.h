/* GET / (and /index.html): the browser page, src/server/web/index.html,
 * compiled into the binary at build time (cmake/embed_file.cmake). */
#ifndef QTTS_SERVER_WEB_H
#define QTTS_SERVER_WEB_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/server.h"

/* The page's bytes (NUL-terminated) and length without the NUL; defined in
 * the generated ${build}/generated/web_index.c. */
extern const unsigned char qtts_web_index_html[];
extern const size_t qtts_web_index_html_len;

/* Queues the page with its security headers. Serves GET and HEAD alike:
 * libmicrohttpd itself leaves the body out of a HEAD answer (keeping
 * Content-Length), so the caller only has to allow both methods. */
enum MHD_Result srv_route_web_page(qtts_server *s, struct MHD_Connection *c);

#endif
